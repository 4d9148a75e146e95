"""Files done safely: atomic writes, the output-directory lock, start-up checks of TFRecord and
text inputs, and the TFRecord helpers every fine-tuning task shares."""
