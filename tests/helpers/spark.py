"""A small local Spark session for the tests that run the documented Spark
queries (tests/traffic/test_campaign.py, tests/analysis/test_path_sql.py)."""
import contextlib
import os
import shutil
import subprocess

import pytest


@contextlib.contextmanager
def local_spark():
    """A small local Spark session, made before the documented code runs so
    that its getOrCreate() takes this one. Its JVM is ended afterwards, passed
    or failed: pyspark would keep it for the rest of the pytest process. Not a
    fixture: without pyspark or java the test fails, rather than errs in setup."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.fail("pyspark is not installed: run `make deps`")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.fail("no java for Spark: run `make deps` (openjdk-17-jre-headless)")
    try:
        session = (SparkSession.builder.master("local[1]").appName("hopscope-test")
                   .config("spark.driver.memory", "512m")
                   # a short-lived JVM: the quick JIT alone and one GC thread
                   # start it and run the queries in about half the time
                   .config("spark.driver.extraJavaOptions",
                           "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
                   # loopback: the host's name may resolve to a testbed address
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.driver.host", "127.0.0.1")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "1")  # 200 tasks for 4 groups otherwise
                   .getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
        yield session
    finally:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
            gateway.proc.stdin.close()  # the JVM exits when its stdin closes
            try:
                gateway.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                gateway.proc.kill()
                gateway.proc.wait()
            SparkContext._gateway = SparkContext._jvm = None
