"""GLUE: processors for the official TSV layouts, features, metrics, the classifier head."""
