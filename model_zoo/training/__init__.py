"""The scripts that trained ContextLab's own weights (assets/models/*/metrics.json records each run's
command). `python -m model_zoo.train_mlm` (and train_elmo, train_mntp, train_qa) still runs them."""
