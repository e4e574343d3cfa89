"""Corpora and C SQLite (Python's sqlite3) figures for bench/search.sh.

  search.py corpus DIR           write DIR/add.txt (10,000 documents of 8 KiB)
                                 and DIR/corpus.txt (100,000 documents of
                                 ~100 words), one document per line
  search.py sqlite DIR DB QUERY  print the median seconds of: adding add.txt
                                 to a bare FTS5 table in one transaction, and
                                 the ranked MATCH ... ORDER BY bm25() LIMIT 20
                                 query on DB
"""
import itertools, os, random, sqlite3, statistics, sys, tempfile, time

# A Zipf-like vocabulary: word k drawn with weight 1/k.
VOCAB = ["w%d" % k for k in range(1, 20001)]
CUM = list(itertools.accumulate(1.0 / k for k in range(1, 20001)))

def words(rng, n):
    return rng.choices(VOCAB, cum_weights=CUM, k=n)

def corpus(d):
    rng = random.Random(13)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "add.txt"), "w") as f:
        for _ in range(10_000):
            line = " ".join(words(rng, 1800))[:8192]
            f.write(line[:line.rfind(" ")] + "\n")
    with open(os.path.join(d, "corpus.txt"), "w") as f:
        for _ in range(100_000):
            f.write(" ".join(words(rng, 100)) + "\n")

def median(fn, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)

def sqlite_figures(d, db, query):
    docs = open(os.path.join(d, "add.txt")).read().splitlines()
    def add():
        with tempfile.TemporaryDirectory() as tmp:
            c = sqlite3.connect(os.path.join(tmp, "raw.db"), isolation_level=None)
            c.execute("PRAGMA journal_mode=wal")
            c.execute("PRAGMA synchronous=full")
            c.execute("CREATE VIRTUAL TABLE fts USING fts5(body)")
            c.execute("BEGIN")
            c.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", enumerate(docs, 1))
            c.execute("COMMIT")
            c.close()
    match = " ".join('"%s"' % t for t in query.split())
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    sql = "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 20"
    c.execute(sql, (match,)).fetchall()
    def q():
        for _ in range(100):
            c.execute(sql, (match,)).fetchall()
    print("sqlite %s add %.4f query %.6f" % (sqlite3.sqlite_version, median(add, 3), median(q, 5) / 100))

if __name__ == "__main__":
    if sys.argv[1] == "corpus":
        corpus(sys.argv[2])
    else:
        sqlite_figures(*sys.argv[2:5])
