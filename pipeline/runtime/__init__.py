"""What runs the tasks: the executors (:mod:`.execution`), the counters they report
(:mod:`.counters`), memory, disk and locks (:mod:`.resources`) and the allocator
(:mod:`.allocator`)."""
