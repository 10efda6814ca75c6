"""The REST API: a pecan application that reads and writes through objects.
"""
