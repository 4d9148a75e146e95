"""Run the token-wise work of the encoder on real tokens only ("packed" rows).

Every dense layer, LayerNorm and activation of a transformer block works on each token alone;
only attention mixes tokens. So the block can take the batch's real tokens as one [N, H] matrix
(N = the number of 1s in `input_mask`) instead of [B, S, H] with its padding: a batch of 32
sentences whose longest is 70 pieces but whose mean is 33 does half the matrix work. Attention
puts its queries, keys and values back in [B, S, ...] rows (zeros at padding, which the
−10000 mask hides), so every real token's output equals the padded run's up to float rounding.

Padding positions come back as zeros instead of the values the original computes for them; no
task head reads them except the SQuAD v1.1 head, whose n-best list can contain padding
positions, so that model keeps the padded computation. The number of real tokens changes from
batch to batch: XLA on CPUs and GPUs compiles it as a size bounded by B·S, but TPU programs
need fixed shapes, so packed rows are not used there.
"""

import tensorflow as tf


class Packing:
    """Where a batch's real tokens are: `pack` [B, S, W] → [N, W], `unpack` the reverse."""

    def __init__(self, input_mask):
        shape = tf.shape(input_mask)
        self.batch_size, self.length = shape[0], shape[1]
        is_real = tf.reshape(tf.not_equal(input_mask, 0), [-1])
        self.real_positions = tf.cast(tf.where(is_real)[:, 0], tf.int32)  # [N] in [0, B·S)
        count = tf.shape(self.real_positions)[0]
        # Row of each position in the packed matrix; padding points at an extra zero row.
        self.packed_rows = tf.where(is_real, tf.cumsum(tf.cast(is_real, tf.int32)) - 1, count)

    def pack(self, tensor):
        """[B, S, W] or [B·S, W] → [N, W]: the rows of real tokens, in order."""
        width = tensor.shape[-1] if tensor.shape[-1] is not None else tf.shape(tensor)[-1]
        return tf.gather(tf.reshape(tensor, [-1, width]), self.real_positions)

    def unpack(self, packed):
        """[N, W] → [B, S, W], zeros at padding positions (N may be 0: a batch of padding)."""
        width = packed.shape[-1] if packed.shape[-1] is not None else tf.shape(packed)[-1]
        with_zero_row = tf.concat([packed, tf.zeros([1, width], packed.dtype)], axis=0)
        rows = tf.gather(with_zero_row, self.packed_rows)
        return tf.reshape(rows, [self.batch_size, self.length, width])
