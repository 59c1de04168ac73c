"""What commands offer besides a scan: diff of two scans, `show` of one episode, the rule and
format catalogues, the rule scaffold, accuracy on a labelled corpus, standard input.

Each module serves one command; it may import the pipeline and everything below it, and is
imported only by the command line.
"""
