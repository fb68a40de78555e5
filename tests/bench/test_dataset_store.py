"""bench/dataset_store.py on a hand-made collection directory: save stores
only the records not stored yet (a new part each time), leaves out a line
still being written, restores a fresh directory to exactly the stored lines,
refuses to overwrite records the store lacks, and refuses to store a
collection of another request.

ctest runs it as bench_dataset_store; by hand:
    /usr/bin/python3 -m pytest tests/bench/test_dataset_store.py
"""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import dataset_store as ds  # noqa: E402


def write(path, text):
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def collection(tmp_path):
    col = tmp_path / "records"
    col.mkdir()
    write(col / "tasks.json", '{"tasks": []}\n')
    write(col / "records.rank0.jsonl", '{"r": 1}\n{"r": 2}\n')
    write(col / "records.rank1.jsonl", '{"q": 1}\n')
    return col, tmp_path / "store"


def test_save_stores_only_new_whole_lines_and_restore_gives_them_back(collection, tmp_path):
    col, store = collection
    ds.save(str(col), str(store))
    with open(col / "records.rank0.jsonl", "a", encoding="utf-8") as f:
        f.write('{"r": 3}\n{"r": 4, "half')  # the last line is still being written
    ds.save(str(col), str(store))
    ds.save(str(col), str(store))  # nothing new: no part added
    names = sorted(p.name for p in store.iterdir())
    assert names == ["records.rank0.part000.jsonl.xz", "records.rank0.part001.jsonl.xz",
                     "records.rank1.part000.jsonl.xz", "tasks.json.xz"]
    assert ds.stored_lines(ds.parts(str(store))[0]) == ['{"r": 1}\n', '{"r": 2}\n', '{"r": 3}\n']
    fresh = tmp_path / "fresh"
    ds.restore(str(fresh), str(store))
    assert (fresh / "tasks.json").read_text() == '{"tasks": []}\n'
    assert (fresh / "records.rank0.jsonl").read_text() == '{"r": 1}\n{"r": 2}\n{"r": 3}\n'
    assert (fresh / "records.rank1.jsonl").read_text() == '{"q": 1}\n'


def test_restore_never_overwrites_records_the_store_lacks(collection, tmp_path):
    col, store = collection
    ds.save(str(col), str(store))
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    write(fresh / "records.rank1.jsonl", '{"other": 1}\n')
    with pytest.raises(SystemExit, match="other records"):
        ds.restore(str(fresh), str(store))
    assert (fresh / "records.rank1.jsonl").read_text() == '{"other": 1}\n'


def test_a_collection_of_another_request_is_not_stored_over_the_old(collection):
    col, store = collection
    ds.save(str(col), str(store))
    write(col / "tasks.json", '{"tasks": [1]}\n')
    with pytest.raises(SystemExit, match="another request"):
        ds.save(str(col), str(store))
