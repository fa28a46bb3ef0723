"""`python -m model_zoo.train_elmo`, the command the shipped weights' metrics.json records: model_zoo.training.train_elmo."""

import runpy

if __name__ == "__main__":
    runpy.run_module("model_zoo.training.train_elmo", run_name="__main__", alter_sys=True)
