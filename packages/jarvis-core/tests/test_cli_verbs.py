"""``jarvis ask --schema`` / ``-a`` and ``jarvis embed``, run in process over scripted engines registered as
plugins (the helpers of test_cli_ask)."""

from __future__ import annotations

import json
import sys

from jarvis_core.cli.main import main
from jarvis_core.content import ImagePart, TextPart
from jarvis_core.testing import FakeEngine

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_cli_ask import isolated_env, plugins  # noqa: F401  (the fixture is used by every test here)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def engine_class(script, **kw):
    instances = []

    class Scripted(FakeEngine):
        def __init__(self, **options):
            super().__init__(list(script), models=("m1",), **kw)
            instances.append(self)

    Scripted.instances = instances
    return Scripted


def test_schema_in_the_concise_form_prints_the_decoded_object(capsys):
    cls = engine_class(['{"name": "Ada", "age": 36}'], allowed_options={"response_format"})
    with plugins({"fake": cls}):
        assert main(["ask", "--engine", "fake", "--model", "m", "--schema", "name, age int", "who?"]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "Ada", "age": 36}
    sent = cls.instances[0].calls[0].options["response_format"]
    assert sent["json_schema"]["schema"]["properties"]["age"] == {"type": "integer"}


def test_schema_from_a_json_file_and_a_wrong_answer(tmp_path, capsys):
    path = tmp_path / "person.json"
    path.write_text(json.dumps({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}))
    cls = engine_class(['{"age": "old"}'], allowed_options={"response_format"})
    with plugins({"fake": cls}):
        assert main(["ask", "--engine", "fake", "--model", "m", "--schema", str(path), "who?"]) == 1
    err = capsys.readouterr().err
    assert "field 'age' must be of type integer" in err and "Traceback" not in err
    assert cls.instances[0].calls[0].options["response_format"]["json_schema"]["name"] == "person"


def test_schema_on_an_engine_without_it_names_the_engine(capsys):
    with plugins({"fake": engine_class(["x"])}):
        assert main(["ask", "--engine", "fake", "--model", "m", "--schema", "name", "who?"]) == 1
    assert "structured output" in capsys.readouterr().err


def test_attachment_is_sent_as_an_image_part(tmp_path, capsys):
    (tmp_path / "photo.png").write_bytes(PNG)
    cls = engine_class(["a photo"])
    with plugins({"fake": cls}):
        assert main(["ask", "--engine", "fake", "--model", "m", "-a", str(tmp_path / "photo.png"),
                     "-a", "https://example.com/x.png", "what is this?"]) == 0
    assert capsys.readouterr().out == "a photo\n"
    user = cls.instances[0].calls[0].messages[-1]
    assert user.content == (TextPart("what is this?"), ImagePart(data=PNG, media_type="image/png"),
                            ImagePart(url="https://example.com/x.png"))


def test_attachment_that_is_not_an_image_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    with plugins({"fake": engine_class(["x"])}):
        assert main(["ask", "--engine", "fake", "--model", "m", "-a", str(tmp_path / "notes.txt"), "q"]) == 2
    assert "not a PNG" in capsys.readouterr().err


def test_embed_arguments_and_json(capsys):
    cls = engine_class([], embedder=lambda t: [float(len(t)), 0.5])
    with plugins({"fake": cls}):
        assert main(["embed", "--engine", "fake", "--model", "m", "hello", "hi"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert len(out) == 2 and "2 dims" in out[0] and "5.0000" in out[0]
        assert main(["embed", "--engine", "fake", "--model", "m", "--json", "hello"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["data"] == [{"object": "embedding", "index": 0, "embedding": [5.0, 0.5]}] and doc["model"] == "m"


def test_embed_reads_stdin_lines(monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("one\n\ntwo three\n"))
    cls = engine_class([], embedder=lambda t: [float(len(t))])
    with plugins({"fake": cls}):
        assert main(["embed", "--engine", "fake", "--model", "m", "--json", "--encoding-format", "base64"]) == 0
    assert cls.instances[0].embed_calls[0][0] == ["one", "two three"]
    assert all(isinstance(d["embedding"], str) for d in json.loads(capsys.readouterr().out)["data"])


def test_embed_on_an_engine_without_embeddings(capsys):
    with plugins({"fake": engine_class([])}):
        assert main(["embed", "--engine", "fake", "--model", "m", "hello"]) == 1
    assert "has no embeddings" in capsys.readouterr().err
