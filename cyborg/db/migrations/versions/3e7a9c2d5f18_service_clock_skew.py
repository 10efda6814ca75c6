"""How far each conductor's clock is from the database server's."""

from alembic import op
import sqlalchemy as sa

revision = '3e7a9c2d5f18'
down_revision = 'a248f1945ae3'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('clock_skew', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('services') as batch:
        batch.drop_column('clock_skew')
