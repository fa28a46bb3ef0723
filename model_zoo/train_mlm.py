"""`python -m model_zoo.train_mlm`, the command the shipped weights' metrics.json records: model_zoo.training.train_mlm."""

import runpy

if __name__ == "__main__":
    runpy.run_module("model_zoo.training.train_mlm", run_name="__main__", alter_sys=True)
