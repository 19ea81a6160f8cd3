"""PQB evaluation harness: tasks, retrievers, paired-robustness metrics, results and leaderboard.

``import pqb.harness`` stays light (numpy only); retrievers with heavy dependencies are imported lazily
through the model registry.
"""

__version__ = "0.1.0"
