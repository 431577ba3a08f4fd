doctor_USES := core
