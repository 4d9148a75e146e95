"""One training loop and one evaluate-every-checkpoint loop under tf.distribute, shared by all scripts."""
