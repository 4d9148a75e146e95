"""Character classes for the regular-expression engines that tokenize in the graph (RE2, in
tensorflow_text) and in Hugging Face's `tokenizers` (Oniguruma): both read `\\x{HEX}` ranges, so
one builder serves the in-graph tokenizer and tokenizer.json alike."""


def character_class(code_points):
    """`[\\x{9}-\\x{D}\\x{20}...]` for a sorted list of code points, runs folded into ranges."""
    ranges = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    parts = [f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in ranges]
    return "[" + "".join(parts) + "]"
