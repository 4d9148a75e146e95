"""Python files export_to_hf.py copies into a Hugging Face folder, for
`AutoTokenizer.from_pretrained(folder, trust_remote_code=True)`: the original's digit-comma rule
applied exactly, which tokenizer.json alone cannot express (see docs/tokenization.md)."""
