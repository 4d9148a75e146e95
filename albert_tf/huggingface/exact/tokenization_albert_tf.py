"""`AutoTokenizer.from_pretrained(folder, trust_remote_code=True)` on a folder export_to_hf.py
wrote: tokenizer.json with the original's digit-comma rule applied exactly for the learned
pieces listed in tokenizer_config.json (see digit_comma.py). Without trust_remote_code,
transformers loads tokenizer.json as it is (`PreTrainedTokenizerFast`)."""

from transformers import PreTrainedTokenizerFast

from .digit_comma import exact_tokenizer


class AlbertTfTokenizerFast(PreTrainedTokenizerFast):
    """`PreTrainedTokenizerFast` whose backend applies the digit-comma rule exactly."""

    def __init__(self, *args, learned_digit_comma_pieces=(), **kwargs):
        pieces = list(learned_digit_comma_pieces)
        super().__init__(*args, learned_digit_comma_pieces=pieces, **kwargs)
        self._file_steps = (self._tokenizer.normalizer, self._tokenizer.pre_tokenizer)
        self._tokenizer = exact_tokenizer(self._tokenizer, pieces)

    @classmethod
    def convert_to_native_format(cls, trust_remote_code=False, **kwargs):
        """transformers 5 would rebuild the backend of a class with its own `__init__` from the
        vocabulary alone; this one loads tokenizer.json as it is (transformers 4 never calls it)."""
        del trust_remote_code
        return kwargs

    def save_pretrained(self, *args, **kwargs):
        """Saves tokenizer.json with the file's own (JSON) normalizer and pre-tokenizer."""
        backend = self._tokenizer
        exact_steps = (backend.normalizer, backend.pre_tokenizer)
        backend.normalizer, backend.pre_tokenizer = self._file_steps
        try:
            return super().save_pretrained(*args, **kwargs)
        finally:
            backend.normalizer, backend.pre_tokenizer = exact_steps
