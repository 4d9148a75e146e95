"""SavedModel builders: the TF-Hub-style encoder and the task models for TensorFlow Serving."""
