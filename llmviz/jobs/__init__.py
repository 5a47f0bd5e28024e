"""Training as background jobs. :mod:`~llmviz.jobs.manager` queues, shares and budgets them (the decisions themselves,
pure logic, in :mod:`~llmviz.jobs.admission`); :mod:`~llmviz.jobs.job` is a job as pages see it;
:mod:`~llmviz.jobs.supervisor` runs a job's worker from the server's side, :mod:`~llmviz.jobs.worker` is the loop in
the worker, :mod:`~llmviz.jobs.events` what the two say to each other, :mod:`~llmviz.jobs.processes` how workers
start; :mod:`~llmviz.training.tasks` holds the jobs that are not a trainer."""
