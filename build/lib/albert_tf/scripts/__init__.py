"""The command-line jobs. Each module is one script: its flags, `main`, and `entry()` (the
console entry point of `pip install`). The top-level `<name>.py` files of the checkout run the
same module, so `python run_classifier.py ...` and the installed `run_classifier` are one."""
