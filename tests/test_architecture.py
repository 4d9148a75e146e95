"""The layering of docs/architecture.md, checked against the real import edges: a module imports
only from its own layer or the layers below, and no two parts import each other."""

import ast
import os

from tests.conftest import REPO_ROOT

PACKAGES = ("files", "text", "modeling", "huggingface", "pretraining", "glue", "squad", "race", "tagging",
            "training", "export", "serving", "keras_tasks", "scripts", "demo")

# Bottom first; the same list as docs/architecture.md.
LAYERS = [
    {"albert_tf", "onednn_guard", "native_log", "cli", "errors", "config", "progress", "files/"},
    {"text/"},
    {"modeling/"},
    {"checkpoints", "huggingface/"},
    {"training/"},
    {"pretraining/", "glue/", "squad/", "race/", "tagging/", "export/"},
    {"serving/", "keras_tasks/"},
    {"scripts/", "demo/"},
]

# At most this many modules at the package root (__init__ included): the rest live in the parts
# above, so the root's listing shows the architecture.
MAX_ROOT_MODULES = 8


def _part(module):
    parts = module.split(".")
    if len(parts) == 1:
        return "albert_tf"
    return parts[1] + "/" if parts[1] in PACKAGES else parts[1]


def import_edges():
    """{(importing part, imported part)} over albert_tf, parts being packages or modules."""
    edges = set()
    for root, _, names in os.walk(os.path.join(REPO_ROOT, "albert_tf")):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            module = os.path.relpath(path, REPO_ROOT)[:-3].replace(os.sep, ".")
            module = module.removesuffix(".__init__")
            with open(path, encoding="utf-8") as reader:
                tree = ast.parse(reader.read())
            for node in ast.walk(tree):
                imported = []
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("albert_tf"):
                    imported = ([f"albert_tf.{alias.name}" for alias in node.names]
                                if node.module == "albert_tf" else [node.module])
                elif isinstance(node, ast.Import):
                    imported = [a.name for a in node.names if a.name.startswith("albert_tf")]
                for target in imported:
                    if _part(target) != _part(module):
                        edges.add((_part(module), _part(target)))
    return edges


def _layer(part):
    for index, layer in enumerate(LAYERS):
        if part in layer:
            return index
    raise AssertionError(f"albert_tf part {part!r} is in no layer of docs/architecture.md")


def test_imports_only_go_down_the_layers():
    upward = [f"{a} -> {b}" for a, b in sorted(import_edges()) if _layer(b) > _layer(a)]
    assert not upward, "imports against the layering: " + ", ".join(upward)


def test_no_two_parts_import_each_other():
    edges = import_edges()
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)

    def reaches(start, goal, seen=()):
        return any(n == goal or (n not in seen and reaches(n, goal, seen + (n,)))
                   for n in graph.get(start, ()))

    cycles = sorted(f"{a} <-> {b}" for a, b in edges if reaches(b, a))
    assert not cycles, "import cycles: " + ", ".join(cycles)


def test_the_page_lists_every_layer():
    with open(os.path.join(REPO_ROOT, "docs", "architecture.md"), encoding="utf-8") as reader:
        page = reader.read()
    for layer in LAYERS[1:]:
        for part in layer:
            assert f"`{part}`" in page, f"docs/architecture.md does not mention `{part}`"


def test_the_package_root_holds_few_modules():
    root = os.path.join(REPO_ROOT, "albert_tf")
    modules = sorted(name for name in os.listdir(root) if name.endswith(".py"))
    assert len(modules) <= MAX_ROOT_MODULES, modules
    parts = {name[:-3] for name in modules} - {"__init__"}
    parts |= {name + "/" for name in os.listdir(root)
              if os.path.isfile(os.path.join(root, name, "__init__.py"))}
    assert parts == {part for layer in LAYERS for part in layer} - {"albert_tf"}


def _page():
    with open(os.path.join(REPO_ROOT, "docs", "architecture.md"), encoding="utf-8") as reader:
        return reader.read()


def test_the_page_numbers_the_layers_as_this_test():
    """The table's rows (`| N. name | parts |`) are LAYERS in order, and every "layer N,
    `part`" of the prose names the part's layer."""
    import re
    rows = re.findall(r"^\| (\d+)\. [^|]+\| ([^|]+) \|", _page(), re.MULTILINE)
    assert [int(number) for number, _ in rows] == list(range(1, len(LAYERS) + 1))
    for (number, parts), layer in zip(rows, LAYERS):
        assert set(re.findall(r"`([^`]+)`", parts)) == layer - {"albert_tf"}, f"layer {number}"
    mentions = re.findall(r"[Ll]ayer (\d+), `([^`]+)`", _page())
    assert mentions
    for number, part in mentions:
        assert part in LAYERS[int(number) - 1], f"the page puts `{part}` in layer {number}"


def test_the_page_counts_the_shims_lines():
    import re
    (count,) = re.findall(r"top-level `\*\.py` files of the checkout are (\d+)-line shims", _page())
    shims = [name for name in os.listdir(REPO_ROOT) if name.endswith(".py")]
    assert shims
    for name in shims:
        with open(os.path.join(REPO_ROOT, name), encoding="utf-8") as reader:
            assert len(reader.read().splitlines()) == int(count), name
