"""Work spread over processes, results in the order of the tasks."""


def parallel_map(function, tasks, jobs: int):
    """``[function(t) for t in tasks]``, over ``jobs`` processes when ``jobs > 1`` (order kept).

    The processes are spawned (not forked), so ``function`` and the tasks must pickle, and
    each process starts its own JVM if it needs one.
    """
    if jobs <= 1 or len(tasks) <= 1:
        return [function(task) for task in tasks]
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=get_context("spawn")) as pool:
        return list(pool.map(function, tasks))
