"""Training as background jobs: the manager that queues, shares and supervises them
(:mod:`~llmviz.jobs.manager.manager`), the worker process that runs one (:mod:`~llmviz.jobs.manager.worker`) and the tasks that are
not a trainer (:mod:`~llmviz.jobs.manager.tasks`)."""
