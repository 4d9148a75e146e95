"""`make demo` and `make data`: the real data sets from registry packages, the end-to-end
pipeline on them, and its curves."""
