#!/usr/bin/env bash
# The lab benchmark: seed 002's lab, run side by side on one throwaway
# cluster. A legacy table of LAB_ROWS rows over 12 months (the last one the
# current month) is the DEFAULT partition of a RANGE (created_at) parent; a
# writer inserts now() every 5 ms and a reader counts the legacy rows, while
# each contender (1) attaches the current month and (2) drains the rest:
#   partheal   partheal_attach_window, then CALL partheal_partition_data
#   plain PG   CREATE TABLE LIKE, move the rows in one transaction, ATTACH in
#              another (two more tries on a DEFAULT conflict, then move back)
#   pg_partman partition_data_time (p_order DESC) for the current month, then
#              CALL partition_data_proc
# Each contender gets a fresh copy of the same data (CREATE DATABASE from a
# template). Prints each step as it goes, then one row per contender.
#   LAB_ROWS              legacy rows (default 2000000; 200000 for a smoke run)
#   LAB_WRITER_MS         the writer's pacing (default 5)
#   LAB_READER_PAUSE_MS   the reader's pause between counts (default 20)
#   LAB_READER_ISOLATION  the reader's isolation level (default read committed)
#   LAB_CONTENDERS        which to run, in order (default "partheal plain partman")
#   LAB_WRITER_SYNC       the writer's synchronous_commit (default on); off tells
#                         lock waits apart from waits for the WAL flush
#   LAB_SKIP_BUILD=1      use the partheal already installed
# `make bench-attach` runs it; like make test it sets up a fresh Debian 12.
source "$(dirname "$0")/../lib.sh"

rows=${LAB_ROWS:-2000000}
install_packages postgresql-15-partman python3 python3-psycopg2
[ -n "${LAB_SKIP_BUILD:-}" ] || build_and_install

work=$(make_workdir)
start_cluster "$work" <<CONF
shared_buffers = '1GB'
max_wal_size = '8GB'
checkpoint_timeout = '30min'
log_line_prefix = '%m [%p] '
CONF
# Keep the server log, not the data.
trap 'as_pg pg_ctl -D "$CLUSTER_DIR/data" -m fast stop >/dev/null; rm -rf "$CLUSTER_DIR/data"' EXIT
psql_b() { psql_c -q -A -t "$@"; }

say "loading $rows legacy rows over 12 months into the template database"
t0=$(date +%s)
psql_b -c "CREATE DATABASE lab_template"
psql_b >/dev/null <<SQL
\c lab_template
-- The legacy table, in insertion (time) order, with its index on created_at.
-- Every month gets a twelfth of the rows; the current month's run up to now().
CREATE TABLE events_legacy (id bigserial, created_at timestamptz NOT NULL, kind text, payload text);
INSERT INTO events_legacy (created_at, kind, payload)
SELECT ms + ((i - 1) * 12 - k * $rows)::float8 / $rows * (least(ms + interval '1 month', now()) - ms),
       'old', md5(i::text) || md5((i * 7)::text)
  FROM (SELECT i, ((i - 1) * 12) / $rows AS k FROM generate_series(1, $rows::bigint) i) g,
       LATERAL (SELECT date_trunc('month', now()) - interval '11 months'
                       + make_interval(months => k::int) AS ms) m
 ORDER BY i;
CREATE INDEX events_legacy_created_at_idx ON events_legacy (created_at);
CREATE TABLE events (id bigserial, created_at timestamptz NOT NULL, kind text, payload text)
  PARTITION BY RANGE (created_at);
CREATE INDEX events_created_at_idx ON events (created_at);
SELECT setval('events_id_seq', $rows);
ALTER TABLE events ATTACH PARTITION events_legacy DEFAULT;
VACUUM (FREEZE, ANALYZE) events_legacy;
SQL
psql_b -c "ALTER DATABASE lab_template IS_TEMPLATE true"
psql_b -d lab_template -c "SELECT m || ': ' || count(*) FROM (SELECT to_char(created_at, 'YYYY-MM') m FROM events) e GROUP BY m ORDER BY m" | paste -sd' ' | fold -s -w 100
echo "loaded in $(( $(date +%s) - t0 )) s"

cat > "$work/attach_lab.py" <<'PY'
import collections, multiprocessing as mp, os, queue, re, statistics, sys, time
import psycopg2, psycopg2.errors

HOST, PORT = os.environ["LAB_HOST"], os.environ["LAB_PORT"]
ROWS = int(os.environ["LAB_ROWS"])
WRITER_S = float(os.environ.get("LAB_WRITER_MS", "5")) / 1000
READER_PAUSE_S = float(os.environ.get("LAB_READER_PAUSE_MS", "20")) / 1000
READER_ISOLATION = os.environ.get("LAB_READER_ISOLATION", "read committed")
SAMPLE_S = 0.005
LOG = os.environ["LAB_LOG"]
CONTENDERS = os.environ.get("LAB_CONTENDERS", "partheal plain partman").split()
WRITER_SYNC = os.environ.get("LAB_WRITER_SYNC", "on")


def connect(db):
    c = psycopg2.connect(host=HOST, port=PORT, dbname=db, user="postgres")
    c.autocommit = True
    return c


def first_line(e):
    return "%s %s" % (e.pgcode or "", (e.pgerror or str(e)).strip().splitlines()[0])


# --- the writer, the reader and the lock sampler: one process each ---------

def writer(db, stop, q):
    conn = connect(db)
    cur = conn.cursor()
    cur.execute("SET synchronous_commit = %s", (WRITER_SYNC,))
    recs, n, nxt = [], 0, time.time()
    while not stop.is_set():
        n += 1
        t0 = time.time()
        err = None
        try:
            cur.execute("INSERT INTO events (created_at, kind, payload) VALUES (now(), 'live', %s)",
                        ("live-%d" % n,))
        except psycopg2.Error as e:
            err = first_line(e)
            if conn.closed:
                conn = connect(db)
                cur = conn.cursor()
                cur.execute("SET synchronous_commit = %s", (WRITER_SYNC,))
        t1 = time.time()
        recs.append((t0, (t1 - t0) * 1000, err))
        nxt += WRITER_S
        pause = nxt - time.time()
        if pause > 0:
            time.sleep(pause)
        else:
            nxt = time.time()
    q.put(("writer", recs))


def reader(db, stop, q):
    conn = connect(db)
    cur = conn.cursor()
    cur.execute("SET default_transaction_isolation = %s", (READER_ISOLATION,))
    recs = []
    while not stop.is_set():
        t0 = time.time()
        try:
            cur.execute("SELECT count(*) FROM events WHERE kind = 'old'")
            c, err = cur.fetchone()[0], None
        except psycopg2.Error as e:
            c, err = None, first_line(e)
        recs.append((t0, (time.time() - t0) * 1000, c, err))
        time.sleep(READER_PAUSE_S)
    q.put(("reader", recs))


def sampler(db, stop, q):
    """Strong locks seen in pg_locks every 5 ms: EXCLUSIVE or ACCESS EXCLUSIVE
    on the parent, ACCESS EXCLUSIVE on the DEFAULT partition (what ATTACH takes
    there). An interval is a run of samples in which one transaction
    (virtualxid) holds one: a lock released in between (a subtransaction
    rolled back) starts a new interval."""
    conn = connect(db)
    cur = conn.cursor()
    cur.execute("""PREPARE s AS SELECT virtualtransaction, relation::regclass::text, mode FROM pg_locks
                    WHERE granted AND locktype = 'relation'
                      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                      AND ((relation = 'events'::regclass AND mode IN ('ExclusiveLock', 'AccessExclusiveLock'))
                        OR (relation = 'events_legacy'::regclass AND mode = 'AccessExclusiveLock'))""")
    held, open_ = [], {}  # open_: vxid -> [first, last, {relation mode}], seen in the last sample
    nxt = time.time()
    while not stop.is_set():
        t = time.time()
        cur.execute("EXECUTE s")
        now = {}
        for vx, rel, mode in cur.fetchall():
            s = now.setdefault(vx, open_.get(vx) or [t, t, set()])
            s[1] = t
            s[2].add("%s %s" % (rel, mode))
        held += [s for vx, s in open_.items() if vx not in now]  # released since the last sample
        open_ = now
        nxt += SAMPLE_S
        pause = nxt - time.time()
        if pause > 0:
            time.sleep(pause)
        else:
            nxt = time.time()
    held += open_.values()
    q.put(("locks", [(a, b - a + SAMPLE_S, sorted(m)) for a, b, m in held]))


# --- the contenders ----------------------------------------------------------

def month_of(cur, sql):
    cur.execute("SELECT lo::text, (lo + interval '1 month')::text, to_char(lo, 'YYYYMM') FROM (%s) w(lo)" % sql)
    return cur.fetchone()


def current_month(cur):
    return month_of(cur, "SELECT date_trunc('month', now())")


def oldest_month(cur):
    r = month_of(cur, "SELECT date_trunc('month', min(created_at)) FROM ONLY events_legacy")
    return None if r[0] is None else r


def notices(conn, keep=lambda n: True):
    out = [" / ".join(l.strip() for l in n.strip().splitlines()) for n in conn.notices if keep(n)]
    del conn.notices[:]
    return out


class Partheal:
    name = "partheal"

    def setup(self, cur):
        cur.execute("CREATE EXTENSION partheal")

    def attach(self, conn, cur):
        lo, hi, _ = current_month(cur)
        cur.execute("SELECT partition::text, outcome, rows_moved, attempts "
                    "FROM partheal_attach_window('events', %s, %s)", (lo, hi))
        part, outcome, moved, attempts = cur.fetchone()
        return outcome, ["partheal_attach_window: %s %s, %d rows moved, %d attempts"
                         % (part, outcome, moved, attempts)] + notices(conn)

    def drain(self, conn, cur):
        try:
            cur.execute("CALL partheal_partition_data('events', '1 month')")
        except psycopg2.Error as e:
            return "error", notices(conn) + [first_line(e)]
        n = notices(conn)
        return ("done" if any("windows of" in x and "stopped" not in x for x in n) else "stopped"), n


class Plain:
    """The naive approach: move the window's rows out of DEFAULT in one
    transaction, ATTACH in another; on a DEFAULT conflict move what the writer
    added and ATTACH again, twice; then put the rows back."""
    name = "plain PG"
    tries = 3

    def setup(self, cur):
        pass

    def window(self, cur, lo, hi, suffix):
        table = "events_p" + suffix
        cur.execute("CREATE TABLE %s (LIKE events INCLUDING ALL)" % table)
        moved, lines, err = 0, [], None
        for attempt in range(1, self.tries + 1):
            cur.execute("WITH m AS (DELETE FROM ONLY events_legacy WHERE created_at >= %%s AND created_at < %%s "
                        "RETURNING *) INSERT INTO %s SELECT * FROM m" % table, (lo, hi))
            moved += cur.rowcount
            t = time.time()
            try:
                cur.execute("ALTER TABLE events ATTACH PARTITION %s FOR VALUES FROM (%%s) TO (%%s)" % table, (lo, hi))
                err = None
            except psycopg2.errors.CheckViolation as e:
                err = first_line(e)
            lines.append("  %s attempt %d: %d rows moved so far, ATTACH %.0f ms: %s"
                         % (table, attempt, moved, (time.time() - t) * 1000, err or "attached"))
            if err is None:
                return "attached", lines
        cur.execute("WITH m AS (DELETE FROM %s RETURNING *) INSERT INTO events_legacy SELECT * FROM m" % table)
        back = cur.rowcount
        cur.execute("DROP TABLE %s" % table)
        lines.append("  %s: gave up after %d attempts, %d rows moved back into DEFAULT" % (table, self.tries, back))
        return "failed", lines

    def attach(self, conn, cur):
        lo, hi, suffix = current_month(cur)
        return self.window(cur, lo, hi, suffix)

    def drain(self, conn, cur):
        lines, done = [], 0
        while True:
            w = oldest_month(cur)
            if w is None:
                return "done", lines + ["  %d windows attached" % done]
            outcome, l = self.window(cur, *w)
            lines += l
            if outcome != "attached":
                return "stopped", lines + ["  %d windows attached, stopped at %s" % (done, w[0])]
            done += 1


class Partman:
    """pg_partman 4.7 (Debian 12's postgresql-15-partman). create_parent makes
    and attaches its own events_default, and cannot create a child whose rows
    are in DEFAULT, so it is registered before the legacy table is attached
    (in setup, before the writer starts)."""
    name = "pg_partman"

    def setup(self, cur):
        cur.execute("CREATE SCHEMA partman")
        cur.execute("CREATE EXTENSION pg_partman SCHEMA partman")
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_partman'")
        self.version = cur.fetchone()[0]
        cur.execute("SELECT (date_trunc('month', now()) + interval '1 month')::text")
        nxt = cur.fetchone()[0]
        cur.execute("ALTER TABLE events DETACH PARTITION events_legacy")
        cur.execute("SELECT partman.create_parent('public.events', 'created_at', 'native', 'monthly', "
                    "p_premake := 1, p_start_partition := %s)", (nxt,))
        cur.execute("DROP TABLE events_default")
        cur.execute("ALTER TABLE events ATTACH PARTITION events_legacy DEFAULT")

    def attach(self, conn, cur):
        # partition_data_time moves a window's rows out of DEFAULT into a temp
        # table, creates and attaches the child, and moves them back, in one
        # transaction; DESC takes the newest window, the current month.
        try:
            cur.execute("SELECT partman.partition_data_time('public.events', p_batch_count := 1, "
                        "p_order := 'DESC', p_analyze := false)")
            moved = cur.fetchone()[0]
            return "attached", ["partition_data_time DESC: %s rows moved" % moved] + notices(conn)
        except psycopg2.Error as e:
            return "failed", notices(conn) + ["partition_data_time DESC: " + first_line(e)]

    def drain(self, conn, cur):
        try:
            cur.execute("CALL partman.partition_data_proc('public.events', p_wait := 0)")
        except psycopg2.Error as e:
            return "stopped", notices(conn, lambda n: "Batch" not in n) + ["partition_data_proc: " + first_line(e)]
        n = notices(conn)
        return "done", [x for x in n if "Batch" not in x] + ["%d batches" % sum("Batch" in x for x in n)]


# --- a run and its numbers ---------------------------------------------------

def log_size():
    return os.path.getsize(LOG)


def log_lines(start, end):
    with open(LOG, "rb") as f:
        f.seek(start)
        return f.read(end - start).decode(errors="replace").splitlines()


def phl06(lines):
    # (longest hold, all holds) of each attach, in ms
    return [(int(m.group(2)), int(m.group(1))) for m in
            (re.search(r"PHL06 attached .* locked for (\d+) ms in all, (\d+) ms at the longest", l) for l in lines) if m]


def pct(vals, p):
    v = sorted(vals)
    return v[min(len(v) - 1, int(len(v) * p))] if v else 0


def stats(rec, t0, t1):
    w = [r for r in rec["writer"] if t0 <= r[0] < t1]
    lat = [r[1] for r in w]
    errs = collections.Counter(r[2] for r in w if r[2])
    rd = [r for r in rec["reader"] if t0 <= r[0] < t1 and r[2] is not None]
    rerr = [r for r in rec["reader"] if t0 <= r[0] < t1 and r[3]]
    locks = [l for l in rec["locks"] if t0 <= l[0] < t1]
    return dict(
        inserts=len(w), errors=sum(errs.values()), err_top=errs.most_common(2),
        p50=statistics.median(lat) if lat else 0, max=max(lat) if lat else 0,
        over100=sum(1 for x in lat if x >= 100),
        reads=len(rd), lowest=min((r[2] for r in rd), default=None),
        below=sum(1 for r in rd if r[2] < ROWS), read_max=max((r[1] for r in rd), default=0),
        read_errors=len(rerr),
        locks=len(locks), lock_max=max((l[1] * 1000 for l in locks), default=0),
        lock_sum=sum(l[1] * 1000 for l in locks),
        lock_modes=sorted({m for l in locks for m in l[2]}))


def show(label, s, extra):
    print("--- %s" % label)
    for x in extra:
        print("    " + x)
    print("    writer: %d inserts, %d errors, p50 %.1f ms, longest %.0f ms, %d over 100 ms"
          % (s["inserts"], s["errors"], s["p50"], s["max"], s["over100"]))
    for msg, n in s["err_top"]:
        print("      %dx %s" % (n, msg))
    lowest = "-" if s["lowest"] is None else "%d" % s["lowest"]
    print("    reader: %d counts, lowest %s of %d, below in %d, longest count %.0f ms%s"
          % (s["reads"], lowest, ROWS, s["below"], s["read_max"],
             ", %d failed" % s["read_errors"] if s["read_errors"] else ""))
    print("    strong locks (sampled every 5 ms): %d holds, longest %.0f ms, total %.0f ms %s"
          % (s["locks"], s["lock_max"], s["lock_sum"], "; ".join(s["lock_modes"])))
    sys.stdout.flush()


def run(c, admin):
    db = "lab_" + c.name.lower().replace(" ", "_").replace("pg_", "")
    acur = admin.cursor()
    acur.execute("DROP DATABASE IF EXISTS %s" % db)
    acur.execute("CREATE DATABASE %s TEMPLATE lab_template STRATEGY FILE_COPY" % db)
    conn = connect(db)
    cur = conn.cursor()
    c.setup(cur)
    del conn.notices[:]
    cur.execute("CHECKPOINT")
    print("\n== %s%s" % (c.name, " " + c.version if hasattr(c, "version") else ""))
    stop, q = mp.Event(), mp.Queue()
    procs = [mp.Process(target=f, args=(db, stop, q)) for f in (writer, reader, sampler)]
    for p in procs:
        p.start()
    time.sleep(2)
    log0 = log_size()
    t0 = time.time()
    out1, lines1 = c.attach(conn, cur)
    t1 = time.time()
    log1 = log_size()
    out2, lines2 = c.drain(conn, cur)
    t2 = time.time()
    log2 = log_size()
    time.sleep(1)
    stop.set()
    rec = {}
    while len(rec) < len(procs):
        try:
            k, v = q.get(timeout=5)
            rec[k] = v
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                sys.exit("a writer, reader or sampler process failed")
    for p in procs:
        p.join()
    ph1, ph2 = phl06(log_lines(log0, log1)), phl06(log_lines(log1, log2))
    gave_up = sum("PHL07" in l for l in log_lines(log0, log2))
    cur.execute("SELECT count(*) FILTER (WHERE kind = 'live'), count(*) FILTER (WHERE kind = 'old'), "
                "count(*) FROM events")
    live, old, total = cur.fetchone()
    cur.execute("SELECT count(*) FROM ONLY events_legacy")
    left = cur.fetchone()[0]
    cur.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass")
    parts = cur.fetchone()[0]
    conn.close()
    acur.execute("DROP DATABASE %s" % db)

    def with_phl06(lines, ph):
        if ph:
            lines = lines + ["PHL06: %d attaches, parent held longest %d ms, total %d ms"
                             % (len(ph), max(x[0] for x in ph), sum(x[1] for x in ph))]
        return lines
    show("1. attach the current month: %s, %.1f s" % (out1, t1 - t0), stats(rec, t0, t1), with_phl06(lines1, ph1))
    show("2. drain the rest: %s, %.1f s" % (out2, t2 - t1), stats(rec, t1, t2), with_phl06(lines2, ph2))
    whole = stats(rec, 0, float("inf"))
    written = sum(1 for r in rec["writer"] if r[2] is None)
    print("--- afterwards: %d partitions, %d rows left in DEFAULT; %d rows through the parent; "
          "the writer inserted %d, %d are there; %d of %d legacy rows%s"
          % (parts, left, total, written, live, old, ROWS,
             "; %d PHL07 (gave up)" % gave_up if gave_up else ""))
    ph = ph1 + ph2
    return dict(name=c.name, attach=out1, drain=out2, whole=whole, written=written, live=live,
                lost=ROWS + written - total, left=left, ph=ph, seconds=t2 - t0)


def main():
    admin = connect("postgres")
    results = []
    for name in CONTENDERS:
        c = {"partheal": Partheal, "plain": Plain, "partman": Partman}[name]()
        results.append(run(c, admin))

    print("\n== results: %d legacy rows in DEFAULT, writer every %g ms, reader in %s; "
          "whole run (2 s before step 1 to 1 s after step 2)" % (ROWS, WRITER_S * 1000, READER_ISOLATION))
    cols = ["contender", "attach month", "drain", "writer errors", "writer p50 ms", "writer max ms",
            "written/present", "lost", "PHL06 parent max/sum ms", "strong lock max/sum ms",
            "reader lowest", "DEFAULT left", "attach+drain s"]
    rows = []
    for r in results:
        w = r["whole"]
        rows.append([
            r["name"], r["attach"], r["drain"], "%d" % w["errors"], "%.1f" % w["p50"], "%.0f" % w["max"],
            "%d/%d" % (r["written"], r["live"]), "%d" % r["lost"],
            "%d/%d" % (max(x[0] for x in r["ph"]), sum(x[1] for x in r["ph"])) if r["ph"] else "n/a",
            "%.0f/%.0f" % (w["lock_max"], w["lock_sum"]),
            "-" if w["lowest"] is None else "%d" % w["lowest"], "%d" % r["left"], "%.1f" % r["seconds"]])
    width = [max(len(str(x[i])) for x in [cols] + rows) for i in range(len(cols))]
    for x in [cols] + rows:
        print("  ".join(str(v).rjust(width[i]) if i else str(v).ljust(width[i]) for i, v in enumerate(x)))
    print("\nPHL06 parent: partheal's PHL06 log lines, how long each attach held the parent (EXCLUSIVE, "
          "ACCESS EXCLUSIVE in the locked form): the longest single hold, and the sum over all attempts, failed ones included. n/a for the others: their "
          "ATTACH holds the parent SHARE UPDATE EXCLUSIVE.\nstrong lock: sampled from pg_locks every 5 ms, per hold (a run of samples of one transaction): EXCLUSIVE or ACCESS EXCLUSIVE on "
          "events, ACCESS EXCLUSIVE on DEFAULT (ATTACH's lock, which blocks the writer's routed insert and every "
          "reader).\nlost: legacy rows plus the writer's committed rows, less the rows the parent holds afterwards.")
    print("\ngoal: 0 writer errors, 0 rows lost, longest writer insert under 100 ms, reader never below %d" % ROWS)
    for r in results:
        w = r["whole"]
        missed = []
        if w["errors"]:
            missed.append("%d writer errors" % w["errors"])
        if r["lost"]:
            missed.append("%d rows lost" % r["lost"])
        if w["max"] >= 100:
            missed.append("longest insert %.0f ms" % w["max"])
        if w["lowest"] is None or w["lowest"] < ROWS:
            missed.append("reader saw %s" % w["lowest"])
        if r["left"]:
            missed.append("%d rows left in DEFAULT" % r["left"])
        print("  %-10s %s" % (r["name"], "met" if not missed else "missed: " + ", ".join(missed)))


if __name__ == "__main__":
    mp.set_start_method("fork")
    main()
PY
chown postgres "$work/attach_lab.py"

t0=$(date +%s)
LAB_HOST=$CLUSTER_DIR LAB_PORT=$CLUSTER_PORT LAB_ROWS=$rows LAB_LOG=$CLUSTER_DIR/server.log \
  /usr/bin/python3 -u "$work/attach_lab.py"
echo
echo "lab: $(( $(date +%s) - t0 )) s for the contenders; server log: $CLUSTER_DIR/server.log"
