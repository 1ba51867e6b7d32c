"""Sorting and moving keys between tasks: the external merge sort (:mod:`.extsort`), the shuffle
(:mod:`.shuffle`), the run codec (:mod:`.runcodec`) and how a generation is cut into tasks
(:mod:`.partition`)."""
