"""Identity resolution: remembered per job directory, bounded; a job whose environment says
nothing is looked at again only when it has processes not looked at yet, or after a while."""

from __future__ import annotations

from clusterwatch.jobs.file_reader import ErrorCounts, FileReader, read_file
from clusterwatch.jobs.identity_cache import RETRY_S, TRIES, Identities
from clusterwatch.jobs.layout import JobCgroup
from clusterwatch.jobs.procfs import ProcReader
from tests.jobs.fake_tree import ALICE, Tree


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingOpener:
    def __init__(self) -> None:
        self.environ_reads = 0

    def __call__(self, path: str) -> bytes:
        if path.endswith("/environ"):
            self.environ_reads += 1
        return read_file(path)


def identities(tree: Tree) -> tuple[Identities, Clock, CountingOpener]:
    clock, opener = Clock(), CountingOpener()
    procs = ProcReader(str(tree.proc), FileReader(ErrorCounts(), opener))
    return Identities(procs, clock), clock, opener


def job(tree: Tree, name: str, jobid: str | None, inode: int = 1) -> JobCgroup:
    return JobCgroup(scheduler="slurm", key=f"scope/{name}", name=name, inode=inode,
                     cgroup_version=2, jobid=jobid, procs_dir=str(tree.cgroup))


def test_it_reads_the_environment_once_per_job_directory(tree: Tree) -> None:
    tree.process(101, environ={"SLURM_JOB_ID": "5", "SLURM_JOB_ACCOUNT": "a"})
    resolver, _, opener = identities(tree)
    first = resolver.resolve(job(tree, "job_5", "5"), [101])
    assert resolver.resolve(job(tree, "job_5", "5"), [101]) == first
    assert first[0].account == "a" and first[1] == ALICE
    assert opener.environ_reads == 1
    # A new directory of the same name (another inode) is a new job: read again.
    resolver.resolve(job(tree, "job_5", "5", inode=2), [101])
    assert opener.environ_reads == 2


def test_it_looks_at_a_bounded_number_of_processes(tree: Tree) -> None:
    pids = list(range(200, 200 + 3 * TRIES))
    for pid in pids:
        tree.process(pid, uid=0)  # root and no Slurm variables: nothing to learn
    resolver, _, opener = identities(tree)
    metadata, uid = resolver.resolve(job(tree, "s0000000000001", None), pids)
    assert (metadata.jobid, uid) == (None, None)
    assert opener.environ_reads == TRIES


def test_it_retries_an_unresolved_job_with_a_path_job_id_only_after_a_while(tree: Tree) -> None:
    tree.process(101, environ={"HOME": "/root"})
    resolver, clock, opener = identities(tree)
    resolver.resolve(job(tree, "job_5", "5"), [101])
    resolver.resolve(job(tree, "job_5", "5"), [101])
    assert opener.environ_reads == 1
    clock.now += RETRY_S
    resolver.resolve(job(tree, "job_5", "5"), [101])
    assert opener.environ_reads == 2


def test_it_does_not_read_an_unresolved_jobs_processes_again(tree: Tree) -> None:
    tree.process(101, environ={"HOME": "/root"})
    resolver, _, opener = identities(tree)
    sluid = job(tree, "s8FXKTA79XAR00", None)
    for _ in range(5):  # collections with the same process: one read in all
        assert resolver.resolve(sluid, [101])[0].jobid is None
    assert opener.environ_reads == 1


def test_it_looks_only_at_the_new_processes_of_an_unresolved_job(tree: Tree) -> None:
    tree.process(101, environ={"HOME": "/root"})
    resolver, _, opener = identities(tree)
    sluid = job(tree, "s8FXKTA79XAR00", None)
    resolver.resolve(sluid, [101])
    tree.process(102, environ={"SLURM_JOB_ID": "99"})
    assert resolver.resolve(sluid, [101, 102])[0].jobid == "99"
    assert opener.environ_reads == 2  # 101 once, 102 once
    assert resolver.resolve(sluid, [101, 102])[0].jobid == "99"
    assert opener.environ_reads == 2  # resolved: kept


def test_it_looks_at_every_process_again_after_a_while(tree: Tree) -> None:
    tree.process(101, environ={"HOME": "/root"})
    resolver, clock, opener = identities(tree)
    sluid = job(tree, "s8FXKTA79XAR00", None)
    resolver.resolve(sluid, [101])
    clock.now += RETRY_S - 1
    resolver.resolve(sluid, [101])
    assert opener.environ_reads == 1
    # The process ran another program, with the job's environment this time.
    (tree.proc / "101" / "environ").write_bytes(b"SLURM_JOB_ID=99\0")
    clock.now += 1
    assert resolver.resolve(sluid, [101])[0].jobid == "99"
    assert opener.environ_reads == 2


def test_it_stays_bounded_for_a_job_that_churns_processes(tree: Tree) -> None:
    resolver, _, opener = identities(tree)
    sluid = job(tree, "s8FXKTA79XAR00", None)
    for collection in range(10):
        pids = list(range(1000 + 20 * collection, 1020 + 20 * collection))
        for pid in pids:
            tree.process(pid, environ={"HOME": "/root"})
        resolver.resolve(sluid, pids)
        assert opener.environ_reads == TRIES * (collection + 1)
    # Processes that exited are not remembered.
    assert len(resolver._unresolved[(sluid.key, sluid.inode)].looked_at) <= 20


def test_it_forgets_jobs_whose_directories_are_gone(tree: Tree) -> None:
    tree.process(101, environ={"SLURM_JOB_ID": "5"})
    resolver, _, opener = identities(tree)
    resolver.resolve(job(tree, "job_5", "5"), [101])
    resolver.keep_only(set())
    resolver.resolve(job(tree, "job_5", "5"), [101])
    assert opener.environ_reads == 2
