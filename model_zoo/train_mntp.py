"""`python -m model_zoo.train_mntp`, the command the shipped weights' metrics.json records: model_zoo.training.train_mntp."""

import runpy

if __name__ == "__main__":
    runpy.run_module("model_zoo.training.train_mntp", run_name="__main__", alter_sys=True)
