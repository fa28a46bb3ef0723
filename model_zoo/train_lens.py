"""`python -m model_zoo.train_lens`, the command the shipped lenses' metrics.json records: model_zoo.training.train_lens."""

import runpy

if __name__ == "__main__":
    runpy.run_module("model_zoo.training.train_lens", run_name="__main__", alter_sys=True)
