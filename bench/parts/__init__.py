"""The bench's parts, one module each (``bench/run.py --list`` names them): each measures its
figures beside their baselines in the same run and hands them to ``bench.results``.
"""
