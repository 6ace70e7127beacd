# partheal: PGXS build of a C++17 extension for PostgreSQL 15 to 19.
EXTENSION  = partheal
MODULE_big = partheal
DATA       = sql/partheal--0.1.sql sql/partheal--0.3.sql sql/partheal--0.4.sql sql/partheal--0.5.sql \
             sql/partheal--0.6.sql sql/partheal--0.1--0.2.sql sql/partheal--0.2--0.3.sql \
             sql/partheal--0.3--0.4.sql sql/partheal--0.4--0.5.sql sql/partheal--0.5--0.6.sql \
             sql/partheal--0.6--0.7.sql sql/partheal--0.7--0.8.sql \
             sql/partheal--0.8--0.9.sql sql/partheal--0.9--0.10.sql sql/partheal--0.10--0.11.sql \
             sql/partheal--0.11--0.12.sql sql/partheal--0.12--0.13.sql

SRCS = $(sort $(wildcard src/*.cpp src/*/*.cpp))
OBJS = $(SRCS:.cpp=.o)

# The tests, in PGXS's variables. make test (test/run.sh) runs these same
# lists against throwaway clusters; it reads them with make -s print-REGRESS
# and the like, so a test is added here by adding its files.
#
# make installcheck, after make install, runs pg_regress and the isolation
# specs against the running server that PGHOST, PGPORT and PGUSER name, as
# a superuser (the tests create roles, databases and the extension), in the
# databases partheal_regress and partheal_iso (each dropped and created
# again; 11_security reconnects to partheal_regress by name), and then the
# TAP tests, which start clusters of their own from this PostgreSQL's
# binaries (so not as root). The server needs what test/partheal.conf holds
# in its postgresql.conf, and a restart: shared_preload_libraries =
# 'partheal', and settings that the expected output shows or depends on
# (partheal.heal_wait_timeout = '20s', partheal.max_ahead_partitions = 1,
# lc_messages = 'C'), and max_worker_processes = 16. For example:
#   cat test/partheal.conf >> "$PGDATA/postgresql.conf"; pg_ctl -D "$PGDATA" restart
#   make install && make installcheck PGPORT=5432 PGUSER=postgres
# Results land in test/regress/ and test/isolation/ (results/,
# regression.diffs), the TAP logs in tmp_check/.
REGRESS        = $(sort $(basename $(notdir $(wildcard test/regress/sql/*.sql))))
REGRESS_OPTS   = --inputdir=test/regress --outputdir=test/regress
ISOLATION      = $(sort $(basename $(notdir $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test/isolation --outputdir=test/isolation
TAP_TESTS      = 1
PROVE_TESTS    = test/t/*.pl

# make clean: the tests' results and the build key (BUILT_FOR, below). Set
# before pgxs.mk, whose clean rule is there only if EXTRA_CLEAN already is.
EXTRA_CLEAN = $(BUILT_FOR) $(foreach d,test/regress test/isolation,$(addprefix $(d)/,results log regression.diffs regression.out))

# PG=18 builds against the assertion-enabled PostgreSQL 18 that
# test/majors.sh builds (once, into /var/cache/partheal); PG=17 against
# upstream's 17 binaries it puts there; PG=15 against Debian's 15. Without PG, the PGXS convention: PG_CONFIG, or the pg_config on
# PATH (Debian's 15 here). PG is resolved only for the goals that build
# against a server (not for the scripted commands below, which read PG
# themselves, nor for clean or print-VAR), and never over a PG_CONFIG given on
# the command line. installcheck resolves it: PG=18 runs 18's pg_regress.
SCRIPTED_GOALS := test test-all test-citus demo bench bench-attach bench-citus format check-headers clean distclean
BUILDS_HERE := $(if $(MAKECMDGOALS),$(filter-out $(SCRIPTED_GOALS) print-%,$(MAKECMDGOALS)),all)
ifdef PG
ifneq ($(BUILDS_HERE),)
ifneq ($(origin PG_CONFIG),command line)
PG_CONFIG := $(shell bash $(CURDIR)/test/pg_config.sh $(PG))
ifeq ($(PG_CONFIG),)
$(error no server of PostgreSQL $(PG) to build against (see above))
endif
endif
endif
endif
PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(CURDIR)/src
SHLIB_LINK  = -lfmt -lstdc++

# No LLVM bitcode: its clang build would not see -std=c++17, and partheal has
# nothing for the JIT to inline.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS appends --dbname=$(CONTRIB_TESTDB) to REGRESS_OPTS and
# --dbname=$(ISOLATION_TESTDB) to ISOLATION_OPTS (contrib_regression and
# isolation_regression); the tests' own names replace them.
CONTRIB_TESTDB   = partheal_regress
ISOLATION_TESTDB = partheal_iso

# PostgreSQL's headers come in as system headers so that -Wextra -Werror
# judges partheal's code, not theirs.
override CPPFLAGS := $(patsubst -I$(includedir_server),-isystem $(includedir_server),$(CPPFLAGS))
override CPPFLAGS := $(patsubst -I$(includedir_internal),-isystem $(includedir_internal),$(CPPFLAGS))
override CXXFLAGS += -std=c++17 -fPIC -Wall -Wextra -Werror

# SANITIZE=undefined builds a UBSan-instrumented library; SANITIZE=undefined
# make test then fails on any report.
ifdef SANITIZE
override CXXFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SHLIB_LINK += -fsanitize=$(SANITIZE)
endif

$(OBJS): $(wildcard src/*.hpp src/*/*.hpp)

# Objects built against one server are no use to another: they are rebuilt
# whenever the server's version, its headers or the compiler flags change
# (not the pg_config's path: /usr/bin/pg_config and Debian's versioned one are
# the same 15). installcheck builds nothing, so it leaves the key alone.
BUILT_FOR := .built-for
ifneq ($(filter-out installcheck,$(BUILDS_HERE)),)
BUILT_KEY := $(shell $(PG_CONFIG) --version 2>/dev/null) $(includedir_server) $(CXXFLAGS) $(PG_CPPFLAGS) $(SHLIB_LINK)
$(shell [ "$$(cat $(BUILT_FOR) 2>/dev/null)" = '$(BUILT_KEY)' ] || echo '$(BUILT_KEY)' > $(BUILT_FOR))
endif
$(OBJS): $(BUILT_FOR)

# make -s print-REGRESS prints $(REGRESS): how test/run.sh reads the lists
# above (and REGRESS_OPTS, PROVE_TESTS) without a second copy of them.
print-%:
	@echo '$($*)'

.PHONY: demo test test-all test-citus bench bench-attach bench-citus format check-headers
# The scripted commands of the README; each sets up a fresh Debian 12 machine.
demo:
	bash test/demo.sh
test:
	bash test/run.sh
# What CI runs: make test on 15, 18 and 17, check-headers on 19, and
# test-citus when Citus's source is there (test/all_majors.sh).
test-all:
	bash test/all_majors.sh
# make test-citus: the TAP tests of test/citus against a Citus coordinator
# and two workers, Citus built from CITUS_SOURCE (a tarball or a tree;
# ../shared/deps/citus-13.2.2.tar.gz by default) once per machine.
test-citus:
	bash test/citus.sh
bench:
	bash test/bench/run.sh
bench-attach:
	bash test/bench/attach_lab.sh
# make bench-citus: one partition's cost on Citus against the shard count.
bench-citus:
	bash test/citus.sh bench
# make check-headers PG=19: every file compiled with -Werror against that
# major's headers (Debian's server-dev package, unpacked, never installed).
check-headers:
	bash test/check_headers.sh $(PG)
format:
	clang-format -i $(wildcard src/*.cpp src/*/*.cpp src/*/*.hpp src/*.hpp)
