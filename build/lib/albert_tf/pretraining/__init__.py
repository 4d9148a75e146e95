"""Pretraining: instance creation (SOP pairs, n-gram masking), TFRecord I/O, MLM + SOP losses."""
