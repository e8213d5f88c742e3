"""The compiled signing kernel (neardup_solr/text/_kernel.c); everything else is declared in pyproject.toml.

``optional=True``: where no C compiler is at hand the install still succeeds and the package signs with its NumPy
path (neardup_solr.text.kernel says which one is in use)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "neardup_solr.text._kernel",
            sources=["neardup_solr/text/_kernel.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
