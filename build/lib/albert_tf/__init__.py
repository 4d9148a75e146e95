"""albert-tf: ALBERT (Lan et al., ICLR 2020) in TensorFlow 2 / Keras 3, mirroring google-research/ALBERT."""

from albert_tf import onednn_guard

__version__ = "0.1.0"

onednn_guard.cap_isa_if_amx_is_broken()
