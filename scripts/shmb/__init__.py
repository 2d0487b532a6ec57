"""The scripts' shared code: scripts/results.py and scripts/verdict.py are its entry points."""
