"""The documented limits of every input Heliostat reads, in one place.

Past a limit the input is refused with a :class:`~optimizer.errors.ConfigError` naming the
file, the key and the limit — never a traceback, a hang or a machine out of memory (issue 16
found all three with hostile and careless inputs). The README's "Input limits" table lists
the same numbers; change them together.
"""

from __future__ import annotations

#: A data file (matrices, circuits, topologies): CSV or JSON.
MAX_FILE_BYTES = 64 << 20
#: A YAML file (fabric, controller config, devices file): a 1,024-block, 4,096-OCS fabric
#: is about 300 KB, and YAML parses at a few MB a second.
MAX_YAML_FILE_BYTES = 4 << 20
#: A traffic series (``heliostat replay``); the Meta pod traces are a few MB.
MAX_SERIES_FILE_BYTES = 1 << 30
#: Nesting of YAML/JSON collections (a config needs about 5).
MAX_NESTING = 32
#: YAML aliases (``*name``) per document, and the nodes they may expand to in all: an
#: alias bomb of a few hundred bytes otherwise expands to billions of nodes.
MAX_YAML_ALIASES = 100
MAX_YAML_EXPANDED_NODES = 100_000
#: Digits of an integer in YAML or JSON (Python refuses more than 4,300 to convert anyway).
MAX_INT_DIGITS = 30

#: Names of blocks, OCSes, spine switches, fabrics and devices: 1-64 characters, letters,
#: digits and ``- _ . :`` (no spaces, newlines, NUL or other control characters).
MAX_NAME_CHARS = 64
NAME_PUNCTUATION = "-_.:"

#: A fabric. Jupiter's scale is 64 blocks x 512 uplinks, 256 OCSes of 136 ports.
MAX_BLOCKS = 1024
MAX_OCS = 4096
MAX_UPLINKS = 65_536  # per block
MAX_OCS_PORTS = 4096  # radix of one OCS
MAX_SPINES = 1024
MAX_WIRED_PORTS = 1 << 20  # blocks x uplinks over the whole fabric
MAX_SPEED_GBPS = 1e6  # per uplink
#: Planning (TE/ToE LPs grow as blocks^3): ``plan``, ``toe``, ``replay`` and ``run``.
MAX_PLAN_BLOCKS = 256

#: WCMP group table entries per group (``--table-size``); switches hold 64-4096.
MAX_TABLE_SIZE = 65_536
#: One demand (a matrix entry, a series entry, a generated load's result), Gbit/s.
MAX_DEMAND_GBPS = 1e9
#: ``demand generate --load``: the busiest block's load as a fraction of its capacity.
MAX_LOAD = 100.0
#: Seeds of the generators.
MAX_SEED = 2**63 - 1
#: A journal record id (a reconfiguration's): a SQLite INTEGER, a protobuf int64.
MAX_RECORD_ID = 2**63 - 1

#: Controller intervals and timeouts, seconds.
MIN_TE_INTERVAL_S = 0.05
MAX_SECONDS = 30 * 24 * 3600.0
