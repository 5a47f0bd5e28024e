"""Training as background jobs: the manager that queues, shares and supervises them
(:mod:`~llmviz.jobs.manager`), the worker process that runs one (:mod:`~llmviz.jobs.worker`) and the tasks that are
not a trainer (:mod:`~llmviz.jobs.tasks`)."""
