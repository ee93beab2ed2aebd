import sys

from vllm_ledger.cli import main

sys.exit(main())
