"""albert-tf: ALBERT (Lan et al., ICLR 2020) in TensorFlow 2 / Keras 3, mirroring google-research/ALBERT."""

__version__ = "0.1.0"
