"""The bridge to Hugging Face: model folders (config.json, model.safetensors, the tokenizer) to
and from the original checkpoint layout, and HF models for the parity tests."""
