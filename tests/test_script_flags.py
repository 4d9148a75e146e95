"""Every script defines its flags on the FlagValues it is given and runs in-process."""

import importlib
import os
import pkgutil

from absl import app, flags
import pytest
import sentencepiece as spm

from albert_tf import scripts
from albert_tf.scripts import build_vocab, run_pretraining
from tests.conftest import REPO_ROOT

SCRIPT_NAMES = sorted(module.name for module in pkgutil.iter_modules(scripts.__path__))
# A flag only this script has, to tell whether importing it defined anything globally.
OWN_FLAG = {"build_vocab": "model_prefix", "create_pretraining_data": "dupe_factor",
            "export_checkpoints": "albert_directory", "export_to_hf": "label_names",
            "export_to_tfhub": "use_einsum", "import_from_hf": "hf_model_dir",
            "run_classifier": "threshold_to_export", "run_pretraining": "masked_lm_budget",
            "run_race": "max_qa_length", "run_squad": "doc_stride", "run_tagging": "train_step",
            "serve": "num_versions"}


def test_every_script_is_listed():
    assert SCRIPT_NAMES == sorted(OWN_FLAG)


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_importing_defines_nothing_and_flags_go_where_asked(name):
    module = importlib.import_module(f"albert_tf.scripts.{name}")
    assert OWN_FLAG[name] not in flags.FLAGS  # nothing defined at import
    first, second = flags.FlagValues(), flags.FlagValues()
    module.define_flags(first)
    module.define_flags(second)  # no duplicate-flag error: each call has its own FlagValues
    assert OWN_FLAG[name] in first and OWN_FLAG[name] in second
    assert callable(module.run) and callable(module.entry)


def test_build_vocab_runs_in_process(tmp_path):
    text = tmp_path / "text.txt"
    with open(os.path.join(REPO_ROOT, "data", "botchan.txt"), encoding="utf-8") as source:
        text.write_text("".join(source.readlines()[:400]), encoding="utf-8")
    flag_values = flags.FlagValues()
    build_vocab.define_flags(flag_values)
    prefix = tmp_path / "out" / "tiny"
    flag_values(["build_vocab.py", f"--input={text}", f"--model_prefix={prefix}",
                 "--vocab_size=300", "--spm_options=num_threads=1"])
    build_vocab.run(flag_values)
    model = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    assert model.get_piece_size() == 300
    assert [model.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]",
                                                        "[MASK]"]


def test_a_bad_flag_combination_is_a_usage_error_in_process(tmp_path):
    flag_values = flags.FlagValues()
    run_pretraining.define_flags(flag_values)
    flag_values(["run_pretraining.py", "--albert_config_file=c.json", "--input_file=x",
                 f"--output_dir={tmp_path}", "--masked_lm_budget=0.15"])
    with pytest.raises(app.UsageError, match="online masking"):
        run_pretraining.run(flag_values)


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_help_text_keeps_the_docstring_lines(name):
    """A lone backslash at a line's end in the docstring would join two lines of --help."""
    module = importlib.import_module(f"albert_tf.scripts.{name}")
    source = open(module.__file__, encoding="utf-8").read()
    literal = source[:source.index('"""', 3) + 3]
    assert module.__doc__.count("\n") == literal.count("\n")
