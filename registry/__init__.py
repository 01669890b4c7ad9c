"""Control plane: SQLAlchemy models and Alembic migrations, shared by api/ and pipelines/."""
