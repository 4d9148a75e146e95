"""Token classification (run_tagging.py): CoNLL-style "token tag" files, one tag per word."""
