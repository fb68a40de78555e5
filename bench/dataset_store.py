"""Keeps the cost-model dataset's records (issue 21) in the repository, so a
collection spread over several sessions or machines survives a fresh checkout.

`tessera dataset collect --out DIR` writes DIR/tasks.json and one records file
per MPI rank, DIR/records.rankK.jsonl, appending only. `save` stores in
bench/dataset/ the lines of each rank file not stored yet, as a new
xz-compressed part (records.rankK.partNNN.jsonl.xz), and tasks.json (xz) when
it changed, so the repository grows by the new records only. `restore` writes
DIR back from the parts (a rank file only where DIR has fewer lines than the
parts hold, and never over lines the parts do not hold); the collection then
resumes where the stored records end.

  bench/dataset_store.py save    [--dir bench/out/dataset/records]
  bench/dataset_store.py restore [--dir bench/out/dataset/records]
  bench/dataset_store.py status  [--dir ...]

The networks themselves are not stored: bench/dataset_networks.py exports them
again (task keys are structural, the weights random).
"""
import argparse
import glob
import lzma
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(HERE, "dataset")
PART = re.compile(r"records\.rank(\d+)\.part(\d+)\.jsonl\.xz$")
RANK = re.compile(r"records\.rank(\d+)\.jsonl$")


def parts(store):
    """{rank: [part paths in order]} of the store."""
    out = {}
    for path in glob.glob(os.path.join(store, "records.rank*.part*.jsonl.xz")):
        m = PART.search(os.path.basename(path))
        if m:
            out.setdefault(int(m.group(1)), []).append((int(m.group(2)), path))
    return {r: [p for _, p in sorted(v)] for r, v in out.items()}


def stored_lines(paths):
    """The records of the parts, in order, as lines (each ends in a newline)."""
    lines = []
    for p in paths:
        with lzma.open(p, "rt", encoding="utf-8") as f:
            lines.extend(f.readlines())
    return lines


def rank_path(directory, rank):
    """The collection's records file of `rank` (tessera dataset collect's name)."""
    return os.path.join(directory, f"records.rank{rank}.jsonl")


def ranks(directory):
    """The ranks that have a records file in the collection."""
    found = (RANK.search(os.path.basename(p)) for p in glob.glob(os.path.join(directory, "records.rank*.jsonl")))
    return sorted(int(m.group(1)) for m in found if m)


def whole_lines(path):
    """A rank file's complete lines (a line still being written is left out)."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    if lines and not lines[-1].endswith("\n"):
        lines.pop()
    return lines


def save(directory, store):
    os.makedirs(store, exist_ok=True)
    index = os.path.join(directory, "tasks.json")
    if not os.path.exists(index):
        raise SystemExit(f"{index} does not exist: nothing collected in {directory}")
    with open(index, "rb") as f:
        text = f.read()
    saved_index = os.path.join(store, "tasks.json.xz")
    old = None
    if os.path.exists(saved_index):
        with lzma.open(saved_index, "rb") as f:
            old = f.read()
    if old != text:
        if old is not None and any(parts(store).values()):
            raise SystemExit(f"{index} differs from the stored one ({saved_index}): the records stored were "
                             "collected for another request; store this collection elsewhere (--store)")
        with lzma.open(saved_index, "wb", preset=9) as f:
            f.write(text)
        print(f"tasks.json stored ({len(text)} bytes)")
    have = parts(store)
    for rank in ranks(directory):
        path = rank_path(directory, rank)
        lines = whole_lines(path)
        stored = stored_lines(have.get(rank, []))
        if lines[: len(stored)] != stored:
            raise SystemExit(f"{path} does not begin with the {len(stored)} records stored for rank {rank}: "
                             "was it collected anew? Restore first, or store elsewhere (--store)")
        new = lines[len(stored):]
        if not new:
            print(f"rank {rank}: {len(stored)} records, all stored")
            continue
        number = len(have.get(rank, []))
        out = os.path.join(store, f"records.rank{rank}.part{number:03d}.jsonl.xz")
        with lzma.open(out, "wt", encoding="utf-8", preset=9) as f:
            f.writelines(new)
        print(f"rank {rank}: {len(new)} new records -> {out} ({os.path.getsize(out) / 2**20:.2f} MiB); "
              f"{len(lines)} in all")


def restore(directory, store):
    saved_index = os.path.join(store, "tasks.json.xz")
    if not os.path.exists(saved_index):
        raise SystemExit(f"nothing stored: {saved_index} does not exist")
    os.makedirs(directory, exist_ok=True)
    with lzma.open(saved_index, "rb") as f:
        text = f.read()
    index = os.path.join(directory, "tasks.json")
    if os.path.exists(index):
        with open(index, "rb") as f:
            if f.read() != text:
                raise SystemExit(f"{index} differs from the stored {saved_index}: restore into another --dir")
    else:
        with open(index, "wb") as f:
            f.write(text)
    for rank, paths in sorted(parts(store).items()):
        stored = stored_lines(paths)
        path = rank_path(directory, rank)
        lines = whole_lines(path) if os.path.exists(path) else []
        if len(lines) >= len(stored):
            if lines[: len(stored)] != stored:
                raise SystemExit(f"{path} holds other records than the store's for rank {rank}")
            print(f"rank {rank}: {path} already holds the {len(stored)} stored records ({len(lines)} in all)")
            continue
        if stored[: len(lines)] != lines:
            raise SystemExit(f"{path} holds records the store lacks for rank {rank}: not overwritten")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(stored)
        print(f"rank {rank}: {len(stored)} records restored to {path}")


def status(directory, store):
    have = parts(store)
    for rank in sorted(set(have) | set(ranks(directory))):
        stored = len(stored_lines(have.get(rank, [])))
        path = rank_path(directory, rank)
        here = len(whole_lines(path)) if os.path.exists(path) else 0
        print(f"rank {rank}: {stored} records stored in {len(have.get(rank, []))} part(s), {here} in {directory}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("save", "restore", "status"))
    ap.add_argument("--dir", default=os.path.join(HERE, "out", "dataset", "records"),
                    help="the collection's --out directory")
    ap.add_argument("--store", default=STORE, help="where the parts are kept (default: bench/dataset)")
    args = ap.parse_args()
    {"save": save, "restore": restore, "status": status}[args.action](args.dir, args.store)


if __name__ == "__main__":
    sys.exit(main())
