"""`AutoTokenizer.from_pretrained(folder, trust_remote_code=True)` on a folder export_to_hf.py
wrote: tokenizer.json's normaliser and ids with SentencePiece's own search and the original's
digit-comma rule (see digit_comma.py), for the pieces listed in tokenizer_config.json. Each file
this one needs is imported here: transformers copies only the direct imports. Without
trust_remote_code, transformers loads tokenizer.json as it is (`PreTrainedTokenizerFast`)."""

from transformers import PreTrainedTokenizerFast

from .digit_comma import exact_tokenizer
from .unigram_search import UnigramSearch


class AlbertTfTokenizerFast(PreTrainedTokenizerFast):
    """`PreTrainedTokenizerFast` whose backend tokenizes exactly as the original."""

    def __init__(self, *args, user_defined_pieces=(), control_pieces=(), **kwargs):
        user_defined, control = list(user_defined_pieces), list(control_pieces)
        super().__init__(*args, user_defined_pieces=user_defined, control_pieces=control,
                         **kwargs)
        backend = self._tokenizer
        self._file_steps = (backend.normalizer, backend.pre_tokenizer, backend.model)
        self._tokenizer = exact_tokenizer(backend, UnigramSearch.of(backend, user_defined, control))

    @classmethod
    def convert_to_native_format(cls, trust_remote_code=False, **kwargs):
        """transformers 5 would rebuild the backend of a class with its own `__init__` from the
        vocabulary alone; this one loads tokenizer.json as it is (transformers 4 never calls it)."""
        del trust_remote_code
        return kwargs

    def save_pretrained(self, *args, **kwargs):
        """Saves tokenizer.json with the file's own (JSON) normaliser, pre-tokenizer and model."""
        backend = self._tokenizer
        exact_steps = (backend.normalizer, backend.pre_tokenizer, backend.model)
        backend.normalizer, backend.pre_tokenizer, backend.model = self._file_steps
        try:
            return super().save_pretrained(*args, **kwargs)
        finally:
            backend.normalizer, backend.pre_tokenizer, backend.model = exact_steps
