"""`AlbertEncoder`: the original `AlbertModel` (scope `bert/`) as a Keras 3 model.

    encoder = AlbertEncoder(config)   # Keras name "bert", the original's scope
    outputs = encoder({"input_ids": ids, "input_mask": mask, "segment_ids": types}, training=False)
    outputs["sequence_output"]   # [B,S,H] float32, the last block's output
    outputs["pooled_output"]     # [B,H] float32, tanh(dense(sequence_output[:, 0]))
    outputs["encoder_outputs"]   # one [B,S,H] per (layer, inner group)
    outputs["embedding_output"]  # [B,S,E] after LayerNorm and dropout

`input_mask` defaults to ones and `segment_ids` to zeros, as in the original. Layer l uses the
blocks of group `config.group_index(l)`; each group has `inner_group_num` blocks applied in turn,
so a released model (G = K = 1) applies one block L times. Dropout is active only with
training=True. Under a Keras mixed policy (`mixed_bfloat16`, `mixed_float16`) matrix products run
in half precision while LayerNorm, softmax, the residual stream and every output are float32.

`skip_padding=True` (CPUs and GPUs; always MatMul ops) runs the blocks on the batch's real tokens
alone (`packing`): the same outputs at real positions up to float rounding, zeros at padding
positions, and no work spent on padding.
"""

import collections

import keras
import tensorflow as tf

from albert_tf.modeling import embeddings, layers, packing, saving, transformer


@saving.register
class AlbertEncoder(saving.ConfigSerializable, keras.Model):

    def __init__(self, config, use_one_hot_embeddings=False, skip_padding=False, name="bert",
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self._record_arguments(config, use_one_hot_embeddings=use_one_hot_embeddings,
                               skip_padding=skip_padding)
        config.validate()
        self.config = config
        self.skip_padding = skip_padding
        self.embeddings = embeddings.AlbertEmbeddings(
            config, use_one_hot_embeddings, dtype=self.dtype_policy, name="embeddings")
        self.embedding_projection = None
        if config.embedding_size != config.hidden_size:
            self.embedding_projection = layers.Dense(
                config.embedding_size, config.hidden_size, config.initializer_range, None,
                dtype=self.dtype_policy, name="embedding_hidden_mapping_in")
        self.groups = [
            [transformer.TransformerBlock(config, dtype=self.dtype_policy,
                                          name=f"group_{group}_inner_group_{inner}")
             for inner in range(config.inner_group_num)]
            for group in range(config.num_hidden_groups)]
        self.pooler = layers.Dense(
            config.hidden_size, config.hidden_size, config.initializer_range, tf.math.tanh,
            dtype=self.dtype_policy, name="pooler")
        self.built = True  # every variable exists already

    @property
    def embedding_table(self):
        """The [V,E] word table (tied to the masked-LM output)."""
        return self.embeddings.word_embeddings

    def call(self, inputs, training=False):
        input_ids = inputs["input_ids"]
        input_mask = inputs.get("input_mask")
        if input_mask is None:
            input_mask = tf.ones_like(input_ids)
        segment_ids = inputs.get("segment_ids")
        if segment_ids is None:
            segment_ids = tf.zeros_like(input_ids)
        embedding_output = self.embeddings(input_ids, segment_ids, training=training)
        packed = packing.Packing(input_mask) if self.skip_padding else None
        hidden = embedding_output if packed is None else packed.pack(embedding_output)
        if self.embedding_projection is not None:
            hidden = self.embedding_projection(hidden)
        encoder_outputs = []
        for layer_index in range(self.config.num_hidden_layers):
            for block in self.groups[self.config.group_index(layer_index)]:
                hidden = block(hidden, input_mask, training=training, packing=packed)
                encoder_outputs.append(hidden if packed is None else packed.unpack(hidden))
        hidden = encoder_outputs[-1]
        pooled_output = tf.cast(self.pooler(hidden[:, 0]), tf.float32)
        return {
            "sequence_output": hidden,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }

    def checkpoint_variables(self):
        """Ordered {original checkpoint name: variable}, e.g. `bert/embeddings/word_embeddings`."""
        names = layers.prefixed("bert/embeddings/", self.embeddings.checkpoint_variables())
        if self.embedding_projection is not None:
            names.update(layers.prefixed("bert/encoder/embedding_hidden_mapping_in/",
                                         self.embedding_projection.checkpoint_variables()))
        for group_index, group in enumerate(self.groups):
            for inner_index, block in enumerate(group):
                scope = f"bert/encoder/transformer/group_{group_index}/inner_group_{inner_index}/"
                names.update(layers.prefixed(scope, block.checkpoint_variables()))
        names.update(layers.prefixed("bert/pooler/dense/", self.pooler.checkpoint_variables()))
        return collections.OrderedDict(names)
