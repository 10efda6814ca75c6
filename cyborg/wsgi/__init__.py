"""WSGI entry points for uWSGI, mod_wsgi and other WSGI servers."""
