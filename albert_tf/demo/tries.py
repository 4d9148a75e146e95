"""The pre-registered tries at making two cores of pretraining pay (`make paper --tries`) and
the one test that judges them, fixed before any of them ran."""

from albert_tf.demo import verdicts

# The pre-registered tries at making pretraining pay on two cores (issue 36), each judged by
# PASS_TEST, written here before any of them ran. Each is one arm of the comparison at the
# smallest training-set size of the data-efficiency grid (500 sentences) against the random-init
# arm, on the same subsets and seeds.
PASS_TEST = {"min_gain": 0.03, "min_positive_seeds": 4}  # at the smallest efficiency size
PASS_TEST_TEXT = ("pass test (written before any try ran): at 500 sentences, a paired gain over "
                  "random initialisation of at least +3 points, with at least 4 of 5 seeds positive; "
                  "since issue 50 also no run of either arm collapsed to one class")
TRIES = {
    "tapt": {"label": "(a) task-adaptive pretraining: the unlabelled movie-review training "
                      "sentences oversampled (dupe factor 8× Brown's)",
             "pretrain": True},
    "mlm40": {"label": "(b) more masked-LM signal per FLOP: masked LM alone at a 40% masking "
                       "rate", "pretrain": True},
    "encoder-lr": {"label": "(c) an encoder that learns slower than its head: the base model "
                            "fine-tuned with the encoder at a tenth of the head's learning rate "
                            "(--encoder_learning_rate_multiplier=0.1)",
                   "pretrain": False, "fine_tuning_flags": ["--encoder_learning_rate_multiplier=0.1"]},
    "few-passes": {"label": "(c) fewer passes at small N: the base model fine-tuned for a "
                            "quarter of the steps", "pretrain": False, "steps_fraction": 0.25},
}
TAPT_OVERSAMPLING = 8
MLM40 = {"masked_lm_prob": 0.4, "max_predictions_per_seq": 26}  # 40% of 64 positions


def passes(by_arm, name, majority_rate):
    """Whether try `name` passes PASS_TEST against the random-init arm (same seeds), and the
    comparison it was judged on (verdicts.compare). A collapsed run in either arm fails the
    try: a gain resting on a run that answers one class measures nothing."""
    comparison = verdicts.compare(by_arm[name], by_arm["random-init"],
                                  verdicts.one_class_rates(majority_rate))
    counted = comparison["with_collapses"]
    no_collapse = not (comparison["collapsed"]["better"] or comparison["collapsed"]["worse"])
    return (no_collapse and counted["gain"] >= PASS_TEST["min_gain"]
            and comparison["positive"] >= PASS_TEST["min_positive_seeds"]), comparison
