"""`python -m model_zoo.probing`, the command assets/probing/README.md records: model_zoo.lessons.probing."""

import runpy

if __name__ == "__main__":
    runpy.run_module("model_zoo.lessons.probing", run_name="__main__", alter_sys=True)
