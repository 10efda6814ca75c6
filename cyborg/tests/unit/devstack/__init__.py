"""Tests of the DevStack plugin in devstack/."""
