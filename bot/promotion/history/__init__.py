"""History and tracing: since when each reference is what it is and the PR that set it
(`file_history.py`), and a merged promotion reported back to its source repository
(`trace.py`). It imports the GitHub edge, the manifests reader and authorship.
"""
