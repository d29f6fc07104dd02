"""Lipstick's WorkflowGen Arctic stations workflow (section 5.2), with synthetic observations.

An input module passes (year, month, selectivity) to every station; each station module records a
new measurement in its state (monthly observations, 1961-2000, synthetic), computes the lowest air
temperature observed to date for the selectivity ("all", "season", "month" or "year"), takes the
minimum of that and of the minTemp values of the stations feeding it, and outputs it. The output
module computes the overall minimum. Topologies: parallel, serial, or dense (layers of ``fan_out``
stations, each fed by every station of the layer before).
"""

from __future__ import annotations

import random

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession, TrackedFrame

SCHEMA = "Year int, Month int, AirTemp double"


def observations(station: int, seed: int = 11) -> list[tuple[int, int, float]]:
    rng = random.Random(seed * 1000 + station)
    return [
        (year, month, round(-25 + 20 * abs(6.5 - month) / 5.5 * -1 + rng.gauss(0, 4), 1))
        for year in range(1961, 2001)
        for month in range(1, 13)
    ]


def layers(stations: int, topology: str, fan_out: int) -> list[list[int]]:
    if topology == "parallel":
        return [list(range(stations))]
    if topology == "serial":
        return [[i] for i in range(stations)]
    return [list(range(i, min(i + fan_out, stations))) for i in range(0, stations, fan_out)]


def _selected(state: TrackedFrame, selectivity: str, year: int, month: int) -> TrackedFrame:
    if selectivity == "month":
        return state.filter(F.col("Month") == month)
    if selectivity == "season":
        season = [(month - 1) // 3 * 3 + k for k in (1, 2, 3)]
        return state.filter(F.col("Month").isin(season))
    if selectivity == "year":
        return state.filter(F.col("Year") == year)
    return state


def execute(
    prov: ProvenanceSession,
    states: dict[int, list[tuple[int, int, float]]],
    topology: str,
    fan_out: int,
    year: int,
    month: int,
    selectivity: str,
    rng: random.Random,
) -> float:
    spark: SparkSession = prov.spark
    with prov.module("in") as m:
        request = prov.source(
            spark.createDataFrame(
                [(year, month, selectivity)], "Year int, Month int, Selectivity string"
            ),
            "Request",
        )
        request = m.output(request, "Query")
    previous: list[TrackedFrame] = []
    for layer in layers(len(states), topology, fan_out):
        outputs = []
        for station in layer:
            states[station].append((year, month, round(rng.gauss(-20, 8), 1)))
            with prov.module(f"station{station + 1}") as m:
                state = m.state(spark.createDataFrame(states[station], SCHEMA), "Observations")
                m.input(request, "Query")
                local = _selected(state, selectivity, year, month).agg(
                    F.min("AirTemp").alias("MinTemp")
                )
                feeds = [m.input(p, "MinTemp") for p in previous]
                combined = local
                for feed in feeds:
                    combined = combined.union(feed)
                lowest = combined.agg(F.min("MinTemp").alias("MinTemp"))
                # Each module's output is materialized and handed on (Spark's plan is cut there;
                # the rows keep their provenance ids).
                outputs.append(m.output(lowest, "MinTemp").localCheckpoint())
        previous = outputs
    with prov.module("out") as m:
        union = previous[0]
        for p in previous[1:]:
            union = union.union(p)
        overall = m.output(
            m.input(union, "MinTemp").agg(F.min("MinTemp").alias("MinTemp")), "Overall"
        )
        value = overall.collect()[0]["MinTemp"]
    return float(value)


def run(
    prov: ProvenanceSession,
    stations: int = 24,
    topology: str = "dense",
    fan_out: int = 6,
    selectivity: str = "month",
    num_exec: int = 2,
    seed: int = 5,
) -> list[float]:
    rng = random.Random(seed)
    states = {s: observations(s, seed) for s in range(stations)}
    results = []
    for i in range(num_exec):
        year, month = 2001 + i // 12, 1 + i % 12
        results.append(execute(prov, states, topology, fan_out, year, month, selectivity, rng))
    return results
