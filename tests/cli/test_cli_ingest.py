"""`engram ingest <space> FILE|DIR...` over a real data dir (docs/documents.md)."""

from __future__ import annotations

from support import document_files as files

OPS_DID = "did:plc:cliopsadmin0000000000000"  # the server fixture's admin DID (conftest.py)


def test_ingest_a_directory_reports_each_file_and_a_rerun_changes_nothing(engram, tmp_path, space_name):
    engram("space", "create", space_name)
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "guide.md").write_bytes(b"# Guide\n\nInstall it with one command.\n")
    (docs / "sub" / "prices.csv").write_bytes(
        files.csv_file([["plan", "price"], ["Aurora", "$12"], ["Vega", "$40"]])
    )
    (docs / "sub" / "binary.docx").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(200))
    (docs / ".hidden.txt").write_bytes(b"never read")
    result = engram("ingest", space_name, docs, "--json")
    assert result.code == 1, result.err  # one file was refused
    by_file = {d["file"].removeprefix(str(docs) + "/"): d for d in result.json()["documents"]}
    assert set(by_file) == {"guide.md", "sub/prices.csv", "sub/binary.docx"}
    assert (by_file["guide.md"]["kind"], by_file["guide.md"]["chunks"], by_file["guide.md"]["status"]) == (
        "markdown",
        1,
        "created",
    )
    assert (by_file["sub/prices.csv"]["kind"], by_file["sub/prices.csv"]["chunks"]) == ("csv", 2)
    refused = by_file["sub/binary.docx"]
    assert refused["status"] == "refused" and refused["errorName"] == "UnsupportedFileType"
    assert "unsupported file type: binary data" in refused["error"]

    again = engram("ingest", space_name, docs / "guide.md", docs / "sub" / "prices.csv", "--json")
    assert again.code == 0
    assert [d["status"] for d in again.json()["documents"]] == ["unchanged", "unchanged"]

    table = engram("ingest", space_name, docs / "guide.md", "--id", "guide")
    assert table.code == 0
    assert "file" in table.out and "markdown" in table.out and "created" in table.out
    assert "1 document(s), 1 chunk(s), 0 refused" in table.out


def test_ingest_refuses_bad_arguments(engram, tmp_path, space_name):
    engram("space", "create", space_name)
    assert engram("ingest", space_name, tmp_path / "missing.pdf").code != 0
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    assert engram("ingest", space_name, tmp_path / "a.txt", tmp_path / "b.txt", "--id", "x").code == 2
    assert engram("ingest", space_name, tmp_path / "a.txt", "--chunk-tokens", "4").code == 2


def test_engram_admin_ingest_uploads_through_the_admin_procedure(engram, server, tmp_path, space_name):
    base = ("admin", "--remote", server.url, "--key", server.ops_key_file, "--did", OPS_DID)
    assert engram(*base, "space", "create", space_name).code == 0
    (tmp_path / "faq.csv").write_bytes(
        files.csv_file([["question", "answer"], ["Opening hours?", "Nine to five."]])
    )
    (tmp_path / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    out = engram(*base, "--json", "ingest", space_name, tmp_path).json()
    by_name = {d["file"].rsplit("/", 1)[-1]: d for d in out["documents"]}
    assert (by_name["faq.csv"]["kind"], by_name["faq.csv"]["chunks"], by_name["faq.csv"]["status"]) == (
        "csv",
        1,
        "created",
    )
    assert (
        by_name["old.doc"]["status"] == "refused" and by_name["old.doc"]["errorName"] == "UnsupportedFileType"
    )
