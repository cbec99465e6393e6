"""Search benchmark: index build time and query latency percentiles; prints figures.

In process (always): a synthetic corpus of --docs documents (Zipf-distributed words, 30
to 120 a document) and the default index (module documentation), each built into a
temporary directory, then queried through SearchIndex.query and through
SearchExecutor.search (what the server runs per call, thread hand-off included).

End to end (--target ADDR of a running server that serves --index): the same kind of
queries through gRPC with toolclient.client, one unary Execute at a time, then in
batches of --batch over one ExecuteStream.

    python benchmarks/search_bench.py [--docs 100000] [--queries 2000] [--target 127.0.0.1:50051]

To measure the synthetic corpus end to end, write it (--write-corpus), build it into the
server's data directory with `toolserver index build --name synthetic`, and pass
--index synthetic: the queries are drawn from the same vocabulary.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.search.corpus import Document
from toolserver.search.executor import SearchExecutor, ensure_default_index
from toolserver.search.index import Analyzer, build_index, load_index
from toolserver.search.settings import SearchSettings

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "zu", "ar", "el", "in", "os", "um", "dra")

DOCS_QUERIES = (
    "prime factorization of an integer", "greatest common divisor", "least common multiple",
    "solve a system of linear equations", "eigenvalues of a matrix", "binomial coefficient", "modular inverse",
    "integrate a function symbolically", "roots of a polynomial", "derivative of an expression",
    "matrix determinant", "nth prime", "test if a number is prime", "euler totient", "simplify expression",
    "solve an equation", "limit of a function", "taylor series expansion", "divisors of a number",
    "partial fraction decomposition", "gamma function", "combinations of elements", "permutations of elements",
    "exact rational number", "arbitrary precision floating point", "count elements", "standard deviation",
    "random integer in a range", "sort a list by key", "regular expression search",
)


def synthetic_corpus(n: int, seed: int = 0) -> tuple[list[Document], list[str]]:
    """n documents over a 30k-word Zipf vocabulary, and the vocabulary in rank order."""
    rng = np.random.default_rng(seed)
    words = list(dict.fromkeys("".join(rng.choice(SYLLABLES, size=rng.integers(2, 5))) for _ in range(30_000)))
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.07
    weights /= weights.sum()
    lengths = rng.integers(30, 121, size=n)
    drawn = rng.choice(len(words), size=int(lengths.sum()), p=weights)
    documents, start = [], 0
    for i, length in enumerate(lengths):
        text = [words[w] for w in drawn[start:start + length]]
        start += length
        documents.append(Document(f"doc{i}", " ".join(text[:4]), " ".join(text)))
    return documents, words


def synthetic_queries(words: list[str], count: int, seed: int = 1) -> list[str]:
    """Queries of 2 to 6 words drawn with the corpus's Zipf weights: common words included."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.07
    weights /= weights.sum()
    return [" ".join(words[w] for w in rng.choice(len(words), size=rng.integers(2, 7), p=weights))
            for _ in range(count)]


def percentiles(seconds: list[float]) -> str:
    ms = np.asarray(seconds) * 1000
    return f"p50 {np.percentile(ms, 50):6.2f} ms  p99 {np.percentile(ms, 99):6.2f} ms"


def timed(fn, items) -> list[float]:
    samples = []
    for item in items:
        started = time.perf_counter()
        fn(item)
        samples.append(time.perf_counter() - started)
    return samples


def bench_index(settings: SearchSettings, name: str, queries: list[str], top_k: int) -> None:
    index = load_index(settings.data_dir, name, Analyzer())
    timed(lambda q: index.query(q, top_k), queries[:100])  # page the memory maps in
    print(f"  SearchIndex.query         {percentiles(timed(lambda q: index.query(q, top_k), queries))}")
    executor = SearchExecutor.from_settings(settings)

    async def run() -> list[float]:
        samples = []
        for query in queries:
            started = time.perf_counter()
            await executor.search(pb.SearchCall(query=query, index=name, top_k=top_k), "bench")
            samples.append(time.perf_counter() - started)
        return samples

    print(f"  SearchExecutor.search     {percentiles(asyncio.run(run()))}"
          f"  ({'inline' if index.manifest.documents <= settings.inline_max_docs else 'query thread'})")
    executor.close()


def search_request(query: str, index: str, top_k: int) -> pb.ExecuteRequest:
    return pb.ExecuteRequest(request_id=uuid.uuid4().hex, search=pb.SearchCall(query=query, index=index, top_k=top_k))


def bench_end_to_end(target: str, index: str, queries: list[str], top_k: int, batch: int) -> None:
    from toolclient.client import ToolClient

    with ToolClient(target) as client:
        for query in queries[:50]:
            client.execute(search_request(query, index, top_k))
        samples = timed(lambda q: client.execute(search_request(q, index, top_k)), queries)
        print(f"  unary Execute             {percentiles(samples)}  ({len(queries)} calls, one at a time)")
        batches = [queries[i:i + batch] for i in range(0, len(queries), batch)]
        walls: list[float] = []
        server_us: list[int] = []
        for group in batches:
            started = time.perf_counter()
            responses = client.run_many([search_request(q, index, top_k) for q in group])
            walls.append(time.perf_counter() - started)
            server_us.extend(r.elapsed_us for r in responses)
            if any(r.outcome != pb.OK for r in responses):
                raise SystemExit(f"a batched search failed: {[r.error for r in responses if r.outcome != pb.OK][:3]}")
        server_ms = statistics.median(server_us) / 1000
        print(f"  ExecuteStream x{batch:<4}      batch {percentiles(walls)}  "
              f"{len(queries) / sum(walls):8.0f} queries/s  (server-side median {server_ms:.2f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000, help="documents in the synthetic corpus")
    parser.add_argument("--queries", type=int, default=2000, help="queries per measurement")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--target", help="a running server to measure end to end through gRPC")
    parser.add_argument("--index", default="python-docs", help="the index the target serves (end to end)")
    parser.add_argument("--batch", type=int, default=64, help="queries per ExecuteStream batch (end to end)")
    parser.add_argument("--write-corpus", type=Path, metavar="JSONL",
                        help="only write the synthetic corpus, to serve it: toolserver index build --name synthetic")
    parser.add_argument("--no-local", action="store_true", help="skip the in-process figures")
    args = parser.parse_args()
    if args.write_corpus:
        documents, _ = synthetic_corpus(args.docs)
        with args.write_corpus.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(dataclasses.asdict(d)) + "\n" for d in documents)
        print(f"wrote {len(documents)} documents to {args.write_corpus}")
        return

    documents, words = synthetic_corpus(args.docs)
    if not args.no_local:
        with tempfile.TemporaryDirectory() as tmp:
            bench_in_process(SearchSettings(data_dir=str(Path(tmp) / "indexes")), documents, words, args)
    if args.target:
        print(f"end to end through gRPC: {args.target}, index {args.index}")
        if args.index == "python-docs":
            queries = [DOCS_QUERIES[i % len(DOCS_QUERIES)] for i in range(args.queries)]
        else:
            queries = synthetic_queries(words, args.queries)
        bench_end_to_end(args.target, args.index, queries, args.top_k, args.batch)


def bench_in_process(settings: SearchSettings, documents: list[Document], words: list[str],
                     args: argparse.Namespace) -> None:
    print(f"synthetic corpus: {len(documents)} documents")
    started = time.perf_counter()
    manifest = build_index(documents, settings.data_dir, "synthetic")
    print(f"  build                     {time.perf_counter() - started:6.2f} s")
    bench_index(settings, manifest.name, synthetic_queries(words, args.queries), args.top_k)

    print("default index (module documentation)")
    started = time.perf_counter()
    ensure_default_index(settings)
    docs = load_index(settings.data_dir, settings.default_index, Analyzer()).manifest.documents
    print(f"  build                     {time.perf_counter() - started:6.2f} s  ({docs} documents, imports included)")
    queries = [DOCS_QUERIES[i % len(DOCS_QUERIES)] for i in range(args.queries)]
    bench_index(settings, settings.default_index, queries, args.top_k)

if __name__ == "__main__":
    main()
