"""RACE multiple-choice reading comprehension: reader, features, head."""
