;;; bcode.el --- bcode-ls with eglot: diagnostics, code actions, tasks  -*- lexical-binding: t; -*-

;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, languages

;;; Commentary:

;; Registers bcode-ls with eglot for Go and Python buffers and adds
;; commands for bcode's custom methods (sent with `jsonrpc-request'):
;;   M-x bcode-tasks          bcode/tasks in a tabulated list;
;;                            a accept, r reject, R resume, c cancel, RET events
;;   M-x bcode-evidence       bcode.evidence.run, then bcode/evidence into a
;;                            compilation buffer (next-error walks survivors)
;;   M-x bcode-pack           bcode.pack.preview of the region, read-only buffer
;; Evidence diagnostics arrive through Flymake; code actions through
;; `eglot-code-actions'.

;;; Code:

(require 'eglot)
(require 'jsonrpc)
(require 'tabulated-list)

(defgroup bcode nil "bcode-ls in Emacs." :group 'tools)

(defcustom bcode-server-command '("bcode-ls" "--stdio")
  "The bcode-ls command line."
  :type '(repeat string))

(add-to-list 'eglot-server-programs
             `((go-mode go-ts-mode python-mode python-ts-mode js-mode js-ts-mode typescript-mode typescript-ts-mode tsx-ts-mode rust-mode rust-ts-mode)
               . ,(lambda (&rest _) bcode-server-command)))

(defun bcode--server ()
  "The eglot server of the current buffer, or an error saying what to do."
  (or (eglot-current-server)
      (user-error "No bcode-ls here: open a Go, Python, JavaScript, TypeScript or Rust file of a git checkout and M-x eglot")))

(defun bcode--request (method params)
  "Send METHOD with PARAMS to bcode-ls and return the result."
  (jsonrpc-request (bcode--server) method params))

(defun bcode--command (name arg)
  "Run bcode-ls command NAME with argument object ARG."
  (bcode--request :workspace/executeCommand (list :command name :arguments (vector arg))))

(defvar-local bcode--list-server nil "The server a task list came from.")

(defun bcode--task-at-point ()
  "The ID of the task on this line."
  (or (tabulated-list-get-id) (user-error "No task on this line")))

(defun bcode-tasks-refresh ()
  "Fetch bcode/tasks into the task list."
  (interactive)
  (let ((res (jsonrpc-request bcode--list-server :bcode/tasks (make-hash-table))))
    (setq tabulated-list-entries
          (mapcar (lambda (task)
                    (let ((last (plist-get task :lastEvent)))
                      (list (plist-get task :id)
                            (vector (plist-get task :id)
                                    (plist-get task :status)
                                    (or (plist-get task :verdict) "")
                                    (if last (plist-get last :kind) "")
                                    (plist-get task :goal)))))
                  (append (plist-get res :tasks) nil)))
    (tabulated-list-print t)))

(defun bcode--lifecycle (command id &optional args)
  "Run lifecycle COMMAND on task ID (or with ARGS) and refresh the list."
  (let ((res (jsonrpc-request bcode--list-server :workspace/executeCommand
                              (list :command command :arguments (vector (or args (list :id id)))))))
    (message "bcode: task %s is %s" (plist-get res :id) (plist-get res :status))
    (bcode-tasks-refresh)))

(defvar bcode--shown-digests (make-hash-table :test #'equal)
  "The digest of each task's change as `bcode-task-diff' last showed it.
Accept passes it back: bcode-ls refuses, landing nothing, when the task's
change is another now.")

(defun bcode-task-accept (id)
  "Accept task ID after confirmation.
Its commits land on the current branch; nothing is pushed.  Only the change
shown lands: the diff buffer's, else the change read now, named in the
question."
  (interactive (list (bcode--task-at-point)))
  (let ((digest (or (gethash id bcode--shown-digests)
                    (plist-get (jsonrpc-request bcode--list-server :bcode/taskDiff (list :id id)) :digest))))
    (when (yes-or-no-p (format "Accept task %s? Its commits land on your current branch (fast-forward, or cherry-pick if the branch moved); nothing is pushed. Change %s. " id digest))
      (bcode--lifecycle "bcode.task.accept" id (list :id id :digest digest)))))

(defun bcode-task-reject (id)
  "Reject task ID: its work is thrown away; your branch is untouched."
  (interactive (list (bcode--task-at-point)))
  (when (yes-or-no-p (format "Reject task %s? " id))
    (bcode--lifecycle "bcode.task.reject" id)))

(defun bcode-task-resume (id)
  "Resume task ID."
  (interactive (list (bcode--task-at-point)))
  (bcode--lifecycle "bcode.task.resume" id))

(defun bcode-task-cancel (id)
  "Cancel task ID."
  (interactive (list (bcode--task-at-point)))
  (bcode--lifecycle "bcode.task.cancel" id))

(defun bcode-task-events (id)
  "Show task ID's events."
  (interactive (list (bcode--task-at-point)))
  (let ((d (jsonrpc-request bcode--list-server :bcode/task (list :id id))))
    (with-current-buffer (get-buffer-create (format "*bcode task %s*" id))
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "%s\n\n" (plist-get (plist-get d :task) :goal)))
        (seq-doseq (e (plist-get d :events))
          (insert (format "#%s  %s  %s\n" (plist-get e :seq) (plist-get e :at) (plist-get e :kind)))))
      (special-mode)
      (pop-to-buffer (current-buffer)))))

(defun bcode-task-diff (id)
  "Show task ID's change (bcode/taskDiff) in a `diff-mode' buffer.
bcode-ls reads it from the task's branch; binary and large files are named
at the top instead of shown."
  (interactive (list (bcode--task-at-point)))
  (let ((d (jsonrpc-request bcode--list-server :bcode/taskDiff (list :id id))))
    (puthash id (plist-get d :digest) bcode--shown-digests)
    (with-current-buffer (get-buffer-create (format "*bcode diff %s*" id))
      (let ((inhibit-read-only t))
        (erase-buffer)
        (seq-doseq (n (or (plist-get d :notes) []))
          (insert (format "# bcode: %s\n" n)))
        (seq-doseq (f (plist-get d :files))
          (when (equal (plist-get f :omitted) "binary")
            (insert (format "# bcode: %s\n" (plist-get f :note)))))
        (insert (or (plist-get d :diff) "")))
      (diff-mode)
      (setq buffer-read-only t)
      (goto-char (point-min))
      (pop-to-buffer (current-buffer)))))

(defvar bcode-tasks-mode-map
  (let ((m (make-sparse-keymap)))
    (define-key m "a" #'bcode-task-accept)
    (define-key m "r" #'bcode-task-reject)
    (define-key m "R" #'bcode-task-resume)
    (define-key m "c" #'bcode-task-cancel)
    (define-key m "d" #'bcode-task-diff)
    (define-key m (kbd "RET") #'bcode-task-events)
    (define-key m "g" #'bcode-tasks-refresh)
    m))

(define-derived-mode bcode-tasks-mode tabulated-list-mode "bcode-tasks"
  "The tasks of a bcode workspace."
  (setq tabulated-list-format [("ID" 11 t) ("Status" 10 t) ("Verdict" 11 t) ("Last event" 17 t) ("Goal" 0 nil)])
  (tabulated-list-init-header))

(defun bcode-tasks ()
  "List the workspace's tasks (bcode/tasks)."
  (interactive)
  (let ((server (bcode--server)))
    (with-current-buffer (get-buffer-create "*bcode tasks*")
      (bcode-tasks-mode)
      (setq bcode--list-server server)
      (bcode-tasks-refresh)
      (pop-to-buffer (current-buffer)))))

(defun bcode-evidence ()
  "Run evidence, wait for it, list surviving mutants in a compilation buffer."
  (interactive)
  (let* ((server (bcode--server))
         (root (project-root (eglot--project server))))
    (bcode--command "bcode.evidence.run" (make-hash-table))
    (let ((rep (jsonrpc-request server :bcode/evidence (list :wait t) :timeout 600)))
      (with-current-buffer (get-buffer-create "*bcode evidence*")
        (let ((inhibit-read-only t))
          (erase-buffer)
          (setq default-directory root)
          (seq-doseq (m (plist-get rep :mutants))
            (when (member (plist-get m :verdict) '("survived" "not_covered" "timeout"))
              (insert (format "%s:%s:%s: %s: `%s` -> `%s` (%s)\n" (plist-get m :file) (plist-get m :line) (plist-get m :col)
                              (plist-get m :verdict) (plist-get m :original) (plist-get m :mutated) (plist-get m :operator))))))
        (compilation-mode)
        (pop-to-buffer (current-buffer))))))

(defun bcode-pack (beg end)
  "Preview the context pack of the region BEG..END in a read-only buffer."
  (interactive "r")
  (let* ((uri (eglot--path-to-uri (buffer-file-name)))
         (range (list :start (eglot--pos-to-lsp-position beg) :end (eglot--pos-to-lsp-position end)))
         (res (bcode--command "bcode.pack.preview" (list :uri uri :range range))))
    (with-current-buffer (get-buffer-create "*bcode pack*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (plist-get res :text)))
      (special-mode)
      (pop-to-buffer (current-buffer)))))

(provide 'bcode)
;;; bcode.el ends here
